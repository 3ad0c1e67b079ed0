-- demo.sql: a year of daily temperatures on a 1-degree global grid (365 x 180 x 360 float32,
-- ~24 million cells in one compressed file) queried as an ordinary SQL table, and the same
-- grid's precipitation (precip.b2nd) as a second variable of one table.
--
-- Run by scripts/demo.sh from the demo/ directory that tests/tools/mkdemo fills (temp.b2nd and
-- stations.sql):   cd demo && sqlite3 < ../sql/demo.sql
-- The file carries coordinates: time is a date of 2023 ('2023-07-15'), lat and lon are the
-- degrees of the cell centres (-89.5 .. 89.5, -179.5 .. 179.5); the hidden columns
-- time_index, lat_index and lon_index hold the grid indices. Each query also shows how many
-- compressed blocks it decompressed ("blocks", of 5328 in the array): only those holding
-- cells the query reads, and not those still in the table's block cache from an earlier
-- query.
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
       json_extract(i, '$.ratio') AS ratio, json_extract(i, '$.attributes.units') AS units,
       json_extract(i, '$.coords.time.first') || ' .. ' ||
         json_extract(i, '$.coords.time.last') AS dates
FROM (SELECT caterva_info('temp.b2nd') AS i);

-- The array as a table: columns time (dates), lat, lon (degrees; the file's dimension names
-- and coordinates) and celsius.
CREATE VIRTUAL TABLE temps USING caterva('temp.b2nd', value='celsius');
CREATE TEMP TABLE mark(n INTEGER);
INSERT INTO mark VALUES(caterva_blocks_read());
.timer on

.print
.print '== One day (15 July): the whole map, 64800 cells'
SELECT round(min(celsius), 1) AS coldest, round(avg(celsius), 1) AS mean,
       round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE time = '2023-07-15';
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== Two circles of latitude (50.5 S and 50.5 N), every day: opposite seasons'
SELECT lat AS latitude,
       round(avg(celsius) FILTER (WHERE time BETWEEN '2023-01-01' AND '2023-01-31'), 1) AS january,
       round(avg(celsius) FILTER (WHERE time BETWEEN '2023-07-01' AND '2023-07-31'), 1) AS july,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE lat IN (-50.5, 50.5) GROUP BY lat;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== The Greenwich meridian (lon = 0.5 E), every day: annual mean by band'
SELECT printf('%3d .. %3d', lat_index / 30 * 30 - 90, lat_index / 30 * 30 - 60) AS latitudes,
       round(avg(celsius), 1) AS mean, round(min(celsius), 1) AS coldest,
       round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps WHERE lon = 0.5 GROUP BY lat_index / 30;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== A box: Europe (35-65 N, 10 W-30 E) in the first week of August'
SELECT count(*) AS cells, round(avg(celsius), 1) AS mean, round(max(celsius), 1) AS hottest,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps
WHERE time BETWEEN '2023-08-01' AND '2023-08-07' AND lat BETWEEN 35 AND 65
  AND lon BETWEEN -10 AND 30;
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== A join: the stations table (real coordinates) with the array, January and July means'
.print '   (caterva_nearest maps a station to the grid cell holding it)'
SELECT *, caterva_blocks_read() - (SELECT n FROM mark) AS blocks FROM (
  SELECT s.name AS station, printf('%.1f', s.lat) AS lat,
         round(avg(t.celsius) FILTER (WHERE t.time <= '2023-01-31'), 1) AS january,
         round(avg(t.celsius) FILTER (WHERE t.time >= '2023-07-01'), 1) AS july
  FROM stations AS s JOIN temps AS t
    ON t.lat_index = caterva_nearest('temps', 'lat', s.lat)
   AND t.lon_index = caterva_nearest('temps', 'lon', s.lon)
  WHERE (t.time BETWEEN '2023-01-01' AND '2023-01-31' OR t.time BETWEEN '2023-07-01' AND '2023-07-31')
    AND s.name IN ('Yakutsk', 'Moscow', 'Chicago', 'Beijing', 'London', 'Cairo', 'Singapore',
                   'Nairobi', 'Sydney', 'Buenos Aires', 'McMurdo Station')
  GROUP BY s.name ORDER BY july - january DESC);
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print "== A monthly climatology by date: London and Singapore, strftime('%m', time)"
SELECT strftime('%m', t.time) AS month,
       round(avg(t.celsius) FILTER (WHERE s.name = 'London'), 1) AS london,
       round(avg(t.celsius) FILTER (WHERE s.name = 'Singapore'), 1) AS singapore,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM stations AS s JOIN temps AS t
  ON t.lat_index = caterva_nearest('temps', 'lat', s.lat)
 AND t.lon_index = caterva_nearest('temps', 'lon', s.lon)
WHERE s.name IN ('London', 'Singapore')
GROUP BY month ORDER BY month;
.timer off
UPDATE mark SET n = caterva_blocks_read();
-- Created while the timer is off (the shell times every statement, so a CREATE after
-- .timer on printed a stray "Run Time" line above the table), and after the mark, so
-- the blocks its opening reads still count in this query's "blocks" as before.
CREATE VIRTUAL TABLE weather USING caterva('temp.b2nd', 'precip.b2nd', value='celsius,precip');
.timer on

.print
.print '== Two variables in one table: temp.b2nd and precip.b2nd on the same grid'
.print '   (the five wettest Julys among the stations; only the columns read are decompressed)'
SELECT *, caterva_blocks_read() - (SELECT n FROM mark) AS blocks FROM (
  SELECT s.name AS station, round(avg(w.celsius), 1) AS july_mean,
         round(sum(w.precip), 0) AS july_mm
  FROM stations AS s JOIN weather AS w
    ON w.lat_index = caterva_nearest('weather', 'lat', s.lat)
   AND w.lon_index = caterva_nearest('weather', 'lon', s.lon)
  WHERE w.time BETWEEN '2023-07-01' AND '2023-07-31'
  GROUP BY s.name ORDER BY july_mm DESC LIMIT 5);
.timer off
UPDATE mark SET n = caterva_blocks_read();
.timer on

.print
.print '== For comparison, the whole year: every one of the 23,652,000 cells'
SELECT count(*) AS cells, round(avg(celsius), 2) AS mean,
       caterva_blocks_read() - (SELECT n FROM mark) AS blocks
FROM temps;
.timer off

.print
.print '== A picture: 15 July (time = 195) with caterva_png(), written to july15.png'
SELECT writefile('july15.png',
         caterva_png('temps', '[195,0,0]',
                     json_array(196, json_extract(i, '$.shape[1]'), json_extract(i, '$.shape[2]')),
                     'origin=lower colorbar=1 scale=2')) AS png_bytes
FROM (SELECT caterva_info('temps') AS i);
