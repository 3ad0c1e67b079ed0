-- Opening arrays: columns, names, options, and the errors of CREATE VIRTUAL TABLE.
.mode list
.headers off

CREATE VIRTUAL TABLE g USING caterva('grid.b2nd');
SELECT name, type FROM pragma_table_info('g');
SELECT count(*), sum(value), min(rowid), max(rowid) FROM g;
SELECT rowid, lat, lon, value FROM g WHERE lat = 2 AND lon = 3;

-- dims= and value= rename the columns; quoted identifiers work.
CREATE VIRTUAL TABLE g2 USING caterva(path='grid.b2nd', dims='row, "odd col"', value="v a l");
SELECT name FROM pragma_table_info('g2');
SELECT "odd col", "v a l" FROM g2 WHERE row = 1 AND "odd col" >= 3;

-- Files without stored names: d0, d1, ...
CREATE VIRTUAL TABLE r USING caterva('ramp.b2nd');
SELECT name, type FROM pragma_table_info('r');

-- dtype= overrides the file's dtype (same item size).
CREATE VIRTUAL TABLE gb USING caterva('grid.b2nd', dtype='|S4');
SELECT name, type FROM pragma_table_info('gb') WHERE name = 'value';
SELECT hex(value) FROM gb WHERE lat = 1 AND lon = 2;
CREATE VIRTUAL TABLE gu USING caterva('grid.b2nd', dtype='uint32');
SELECT value FROM gu WHERE lat = 3 AND lon = 4;

-- The temp schema.
CREATE VIRTUAL TABLE temp.tg USING caterva('grid.b2nd', cache_mb=0);
SELECT count(*) FROM temp.tg WHERE lon = 0;

-- DROP TABLE leaves the file; RENAME works.
ALTER TABLE tg RENAME TO tg2;
SELECT count(*) FROM tg2;
DROP TABLE tg2;
SELECT json_extract(caterva_info('grid.b2nd'), '$.shape');

-- The module is DIRECTONLY: not usable from views or triggers.
CREATE VIEW gv AS SELECT * FROM g;
SELECT count(*) FROM gv;
-- It is not eponymous.
SELECT * FROM caterva;

-- Errors.
CREATE VIRTUAL TABLE e1 USING caterva;
CREATE VIRTUAL TABLE e2 USING caterva('no-such-file.b2nd');
CREATE VIRTUAL TABLE e3 USING caterva('grid.b2nd', shape='3,4');
CREATE VIRTUAL TABLE e4 USING caterva('grid.b2nd', cache_mb=-1);
CREATE VIRTUAL TABLE e5 USING caterva('grid.b2nd', cache_mb=lots);
CREATE VIRTUAL TABLE e6 USING caterva('grid.b2nd', dtype='<f8');
CREATE VIRTUAL TABLE e7 USING caterva('grid.b2nd', dtype='quaternion');
CREATE VIRTUAL TABLE e8 USING caterva('grid.b2nd', dims='a');
CREATE VIRTUAL TABLE e9 USING caterva('grid.b2nd', dims='a,b,c');
CREATE VIRTUAL TABLE e10 USING caterva('grid.b2nd', dims='a,A');
CREATE VIRTUAL TABLE e11 USING caterva('grid.b2nd', dims='value,b');
CREATE VIRTUAL TABLE e12 USING caterva('grid.b2nd', value='');
CREATE VIRTUAL TABLE e13 USING caterva('grid.b2nd', path='ramp.b2nd');
CREATE VIRTUAL TABLE e14 USING caterva('truncated.b2nd');
CREATE VIRTUAL TABLE e15 USING caterva('garbage.b2nd');
CREATE VIRTUAL TABLE e16 USING caterva('zero.b2nd');
CREATE VIRTUAL TABLE e17 USING caterva('emptydir.b2frame');
CREATE VIRTUAL TABLE e18 USING caterva('.');
SELECT count(*) FROM sqlite_schema WHERE name LIKE 'e%';
