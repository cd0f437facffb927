-- Q19, the ten highest bids of each auction (date_time breaks ties of
-- price, so rank_number is deterministic).
SELECT * FROM
    (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, date_time) AS rank_number FROM bid) AS t
WHERE rank_number <= 10
