-- Q18, the last bid of each bidder on each auction (the derived table is
-- given an alias, which PostgreSQL requires).
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
    SELECT *,
        ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra) AS rank_number
    FROM bid
) AS t
WHERE rank_number <= 1
