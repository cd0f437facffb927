-- Q11, user sessions: bids per bidder per session (10-second gap).
SELECT B.bidder, count(*) AS bid_count,
    SESSION_START(B.date_time, INTERVAL '10' SECOND) AS starttime,
    SESSION_END(B.date_time, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.date_time, INTERVAL '10' SECOND)
