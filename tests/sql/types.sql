-- Items as SQL values, and degenerate shapes.
.mode list
.headers off

CREATE VIRTUAL TABLE b USING caterva('bool.b2nd');
SELECT d0, value, typeof(value) FROM b;
CREATE VIRTUAL TABLE u USING caterva('u64.b2nd');
-- uint64 above INT64_MAX is REAL
SELECT d0, value, typeof(value) FROM u;
CREATE VIRTUAL TABLE h USING caterva('f16.b2nd');
-- NaN is NULL
SELECT d0, value, typeof(value) FROM h;
CREATE VIRTUAL TABLE f USING caterva('f32nan.b2nd');
SELECT d0, value, typeof(value) FROM f;
SELECT count(*), count(value) FROM f;
CREATE VIRTUAL TABLE be USING caterva('be.b2nd');
SELECT d0, value FROM be;
CREATE VIRTUAL TABLE s USING caterva('ucs4.b2nd');
SELECT d0, value, typeof(value), length(value) FROM s;
CREATE VIRTUAL TABLE y USING caterva('bytes.b2nd');
SELECT d0, hex(value), typeof(value) FROM y;
CREATE VIRTUAL TABLE t USING caterva('time.b2nd');
-- datetime64 as a count of units; NaT is NULL
SELECT d0, value, typeof(value) FROM t;
SELECT name, type FROM pragma_table_info('t');

-- A 0-d array is one row with only the value column.
CREATE VIRTUAL TABLE z USING caterva('scalar.b2nd');
SELECT name FROM pragma_table_info('z');
SELECT rowid, value FROM z;
SELECT count(*) FROM z WHERE value > 3;
-- A zero-length dimension: no rows.
CREATE VIRTUAL TABLE e USING caterva('empty.b2nd');
SELECT count(*), sum(value) FROM e;
SELECT count(*) FROM e WHERE d0 = 0 AND d1 = 0;
-- One cell, sparse frame.
CREATE VIRTUAL TABLE o USING caterva('one.b2frame');
SELECT * FROM o;
SELECT * FROM o WHERE d0 = 0 AND d1 = 0 AND d2 = 0;
SELECT count(*) FROM o WHERE d1 = 1;
