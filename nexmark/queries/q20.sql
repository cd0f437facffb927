-- Q20, bids on auctions of category 10, with the auction's columns.
SELECT auction, bidder, price, channel, url, B.date_time AS bid_date_time,
    item_name, description, initial_bid, reserve, A.date_time AS auction_date_time, expires, seller, category
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10
