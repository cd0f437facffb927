-- Q14, calculation: converted prices in a range, with the time of day.
SELECT auction, bidder, 0.908 * price AS price,
    CASE
        WHEN extract(hour from date_time) >= 8 AND extract(hour from date_time) <= 18 THEN 'dayTime'
        WHEN extract(hour from date_time) <= 6 OR extract(hour from date_time) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    date_time, extra
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000
