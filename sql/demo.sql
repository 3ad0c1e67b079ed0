-- demo.sql: a year of daily temperatures on a 1-degree global grid (365 x 180 x 360 float32,
-- ~24 million cells in one compressed file) queried as an ordinary SQL table.
--
-- Run by scripts/demo.sh from the demo/ directory that tests/mkdemo fills (temp.b2nd and
-- stations.sql):   cd demo && sqlite3 < ../sql/demo.sql
-- Grid indices: time 0 = 1 January; lat index i is latitude i - 89.5; lon index j is
-- longitude j - 179.5. Each query also shows how many compressed blocks it decompressed
-- ("blocks", of 5328 in the array): only those holding cells the query reads, and not those
-- still in the table's block cache from an earlier query.
.bail on
.load ../build/.libs/caterva
.read stations.sql
ANALYZE stations;
.headers on
.mode column

.print '== What is in the file: caterva_info()'
SELECT json_extract(i, '$.shape') AS shape, json_extract(i, '$.chunkshape') AS chunks,
       json_extract(i, '$.blockshape') AS blocks, json_extract(i, '$.dtype') AS dtype,
       json_extract(i, '$.codec') || ' ' || json_extract(i, '$.clevel') AS codec,
       json_extract(i, '$.ratio') AS ratio, json_extract(i, '$.attributes.units') AS units
FROM (SELECT caterva_info('temp.b2nd') AS i);

-- The array as a table: columns time, lat, lon (the file's dimension names) and celsius.
CREATE VIRTUAL TABLE temps USING caterva('temp.b2nd', value='celsius');
CREATE TEMP TABLE mark(n INTEGER);
INSERT INTO mark VALUES(caterva_blocks_read());
.timer on

.print
.print '== One day (time = 195, 15 July): the whole map, 64800 cells'
SELECT round(min(celsius), 1) AS coldest, round(avg(celsius), 1) AS mean,
       round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE time = 195;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== Two circles of latitude (50.5 S and 50.5 N), every day: opposite seasons'
SELECT lat - 89.5 AS latitude,
       round(avg(celsius) FILTER (WHERE time BETWEEN 0 AND 30), 1) AS january,
       round(avg(celsius) FILTER (WHERE time BETWEEN 181 AND 211), 1) AS july,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE lat IN (39, 140) GROUP BY lat;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== The Greenwich meridian (lon = 180, 0.5 E), every day: annual mean by band'
SELECT printf('%3d .. %3d', lat / 30 * 30 - 90, lat / 30 * 30 - 60) AS latitudes,
       round(avg(celsius), 1) AS mean, round(min(celsius), 1) AS coldest,
       round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE lon = 180 GROUP BY lat / 30;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== A box: Europe (35.5-65.5 N, 9.5 W-30.5 E) in the first week of August'
SELECT count(*) AS cells, round(avg(celsius), 1) AS mean, round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps
WHERE time BETWEEN 212 AND 218 AND lat BETWEEN 125 AND 155 AND lon BETWEEN 170 AND 210;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== A join: the stations table with the array, January and July means per city'
SELECT *, caterva_blocks_read() - (SELECT n FROM mark) AS blocks FROM (
  SELECT s.name AS station, printf('%.1f', s.lat) AS lat,
         round(avg(t.celsius) FILTER (WHERE t.time <= 30), 1) AS january,
         round(avg(t.celsius) FILTER (WHERE t.time >= 181), 1) AS july
  FROM stations AS s JOIN temps AS t ON t.lat = s.ilat AND t.lon = s.ilon
  WHERE (t.time BETWEEN 0 AND 30 OR t.time BETWEEN 181 AND 211)
    AND s.name IN ('Yakutsk', 'Moscow', 'Chicago', 'Beijing', 'London', 'Cairo', 'Singapore',
                   'Nairobi', 'Sydney', 'Buenos Aires', 'McMurdo Station')
  GROUP BY s.name ORDER BY july - january DESC);
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== For comparison, the whole year: every one of the 23,652,000 cells'
SELECT count(*) AS cells, round(avg(celsius), 2) AS mean,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps;
