-- Constraints on dimension columns: plans (idxStr, see vtab.c) and results.
.mode list
.headers off
CREATE VIRTUAL TABLE r USING caterva('ramp.b2nd');
CREATE VIRTUAL TABLE g USING caterva('grid.b2nd');

-- Plans: one operator/dimension pair per constraint; the value column sets idxNum 1.
EXPLAIN QUERY PLAN SELECT value FROM r WHERE d0 BETWEEN 10 AND 20;
EXPLAIN QUERY PLAN SELECT count(*) FROM r WHERE d0 > 10 AND d0 < 20;
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lat = 1 AND lon IN (1, 2, 3);
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lat = ?1 AND lon = ?2;
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lat <> 1;
EXPLAIN QUERY PLAN SELECT * FROM r LIMIT 5 OFFSET 2;
EXPLAIN QUERY PLAN SELECT * FROM r WHERE value > 3 LIMIT 5;
-- ORDER BY is consumed on a 1-d array, and when later dimensions are fixed by =.
EXPLAIN QUERY PLAN SELECT * FROM r WHERE d0 > 500 ORDER BY d0 LIMIT 3;
EXPLAIN QUERY PLAN SELECT * FROM r ORDER BY d0 DESC LIMIT 3;
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lon = 2 ORDER BY lat;
EXPLAIN QUERY PLAN SELECT * FROM g ORDER BY lat, lon;
-- literal box inside one block along lon: ordered
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lon BETWEEN 0 AND 1 ORDER BY lat, lon;
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lon BETWEEN 1 AND 2 ORDER BY lat, lon;
-- Other ORDER BYs in C order walk the cells in C order (idxNum 2) with the blocks in the
-- cache; without a cache they are sorted, unless no value is read.
CREATE VIRTUAL TABLE g0 USING caterva('grid.b2nd', cache_mb=0);
EXPLAIN QUERY PLAN SELECT * FROM g0 ORDER BY lat, lon;
EXPLAIN QUERY PLAN SELECT lat, lon FROM g0 ORDER BY lat, lon;
EXPLAIN QUERY PLAN SELECT * FROM g WHERE lat IN (3, 1) ORDER BY lat, lon LIMIT 2;
SELECT group_concat(value, ' ') FROM (SELECT value FROM g ORDER BY lat, lon);
SELECT group_concat(value, ' ') FROM (SELECT value FROM g0 ORDER BY lat, lon);
SELECT group_concat(value, ' ') FROM (SELECT value FROM g WHERE lat IN (3, 1) AND lon BETWEEN 1 AND 3 ORDER BY lat, lon);
SELECT group_concat(value, ' ') FROM (SELECT value FROM g ORDER BY lat, lon LIMIT 7);
SELECT group_concat(lat || ':' || lon, ' ') FROM (SELECT lat, lon FROM g0 WHERE lon > 2 ORDER BY lat, lon);
-- Joins look cells up by the outer row's values.
CREATE TABLE pts(id INTEGER PRIMARY KEY, a, b);
INSERT INTO pts VALUES (1, 0, 0), (2, 3, 4), (3, 3, 9), (4, NULL, 1), (5, 1.0, 2.5), (6, '2', '1');
EXPLAIN QUERY PLAN SELECT * FROM pts JOIN g ON g.lat = pts.a AND g.lon = pts.b;
SELECT id, lat, lon, value FROM pts JOIN g ON g.lat = pts.a AND g.lon = pts.b ORDER BY id;

-- Results.
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 BETWEEN 10 AND 20;
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 > 10 AND d0 < 20;
-- REAL bounds are rounded to the integers that satisfy them.
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 > 10.5 AND d0 < 20.5;
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 >= 10.5 AND d0 <= 20.5;
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 > 10.0 AND d0 <= 20.0;
SELECT count(*) FROM r WHERE d0 = 2.5;
SELECT value FROM r WHERE d0 = 3.0;
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 > -1e300 AND d0 < 1e300;
SELECT count(*) FROM r WHERE d0 < -9223372036854775808 OR d0 > 9223372036854775807;
SELECT count(*), min(d0), max(d0) FROM r WHERE d0 >= -9223372036854775808 AND d0 <= 9223372036854775807;
SELECT count(*), max(d0) FROM r WHERE d0 < 9223372036854775807;
SELECT count(*), min(d0) FROM r WHERE d0 > -9223372036854775808;
-- Numeric text counts as its number; NULL, other text and blobs match nothing.
SELECT value FROM r WHERE d0 = '7';
SELECT count(*) FROM r WHERE d0 < '7.5';
SELECT count(*) FROM r WHERE d0 = NULL;
SELECT count(*) FROM r WHERE d0 > NULL;
SELECT count(*) FROM r WHERE d0 = 'seven';
SELECT count(*) FROM r WHERE d0 = x'07';
SELECT count(*) FROM r WHERE d0 IS 5;
SELECT count(*) FROM r WHERE d0 IS NULL;
-- Out of range and empty boxes.
SELECT count(*) FROM r WHERE d0 BETWEEN 995 AND 10000;
SELECT count(*) FROM r WHERE d0 BETWEEN 20 AND 10;
SELECT count(*) FROM r WHERE d0 = 1000;
SELECT count(*) FROM r WHERE d0 = -1;
SELECT count(*) FROM g WHERE lat = 1 AND lat = 2;
-- IN lists: sorted, deduplicated, intersected with the bounds.
SELECT group_concat(d0) FROM r WHERE d0 IN (7, 3, 3, 999, 1000, -1, 2.5, 4.0, NULL, '5');
SELECT group_concat(d0) FROM r WHERE d0 IN (7, 3, 5, 1) AND d0 > 2;
SELECT group_concat(d0) FROM r WHERE d0 IN (1, 2, 3, 4) AND d0 IN (3, 4, 5);
SELECT group_concat(d0) FROM r WHERE d0 IN (SELECT 2 * value FROM r WHERE d0 < 6);
SELECT group_concat(lat || ':' || lon, ' ') FROM g WHERE lat IN (3, 0) AND lon IN (4, 1);
SELECT count(*) FROM r WHERE d0 IN ();
-- ORDER BY and LIMIT.
SELECT group_concat(d0) FROM (SELECT d0 FROM r WHERE d0 > 500 ORDER BY d0 LIMIT 3);
SELECT group_concat(d0) FROM (SELECT d0 FROM r ORDER BY d0 DESC LIMIT 3);
SELECT group_concat(d0) FROM (SELECT d0 FROM r LIMIT 4 OFFSET 995);
SELECT group_concat(lat || ':' || lon, ' ') FROM (SELECT * FROM g WHERE lon BETWEEN 1 AND 2 ORDER BY lat, lon);
SELECT group_concat(lat || ':' || lon, ' ') FROM (SELECT * FROM g ORDER BY lon DESC, lat LIMIT 5);
SELECT group_concat(d0) FROM (SELECT d0 FROM r WHERE value > 450 LIMIT 3);
SELECT count(*) FROM (SELECT * FROM r LIMIT 0);
SELECT count(*) FROM (SELECT * FROM r LIMIT -1);
-- Bound parameters.
.parameter set ?1 2
.parameter set ?2 3.5
SELECT lat, lon, value FROM g WHERE lat = ?1 AND lon < ?2;
