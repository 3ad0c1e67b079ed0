-- caterva_info, caterva_slice, caterva_blocks_read, caterva_version.
.mode list
.headers off

SELECT caterva_info('grid.b2nd');
SELECT json_valid(caterva_info('golden/s15_i32_2d_vlmeta.b2nd'));
SELECT json_extract(caterva_info('golden/s15_i32_2d_vlmeta.b2nd'), '$.attributes');
SELECT json_extract(caterva_info('golden/c02_i32_2d_caterva_blosclz_sparse.caterva'),
                    '$.dtype', '$.storage', '$.metalayers', '$.codec');
SELECT json_extract(caterva_info('golden/s11_f32_4d_smooth_zlib9_truncprec.b2nd'), '$.filters');

-- The whole array, then boxes [start, stop).
SELECT hex(caterva_slice('grid.b2nd'));
SELECT hex(caterva_slice('grid.b2nd', '[1, 2]', '[3, 4]'));
SELECT hex(caterva_slice('grid.b2nd', NULL, '[1, 5]'));
SELECT length(caterva_slice('grid.b2nd', '[2,2]', '[2,5]')), typeof(caterva_slice('grid.b2nd', '[2,2]', '[2,5]'));
SELECT hex(caterva_slice('scalar.b2nd', '[]', '[]'));
SELECT length(caterva_slice('empty.b2nd'));
SELECT hex(caterva_slice('ramp.b2nd', '[3]', '[4]'));
-- Integers are positions along the first dimension, the others whole.
SELECT hex(caterva_slice('grid.b2nd', 1, 3)), hex(caterva_slice('ramp.b2nd', 3, 4));

-- caterva_blocks_read() counts what this connection decompressed.
SELECT typeof(caterva_blocks_read());
CREATE VIRTUAL TABLE r USING caterva('ramp.b2nd', cache_mb=0);
CREATE TEMP TABLE n0 AS SELECT caterva_blocks_read() AS n;
SELECT sum(value) FROM r WHERE d0 BETWEEN 30 AND 130;
SELECT caterva_blocks_read() - n FROM n0;
SELECT count(*) FROM r WHERE d0 BETWEEN 30 AND 130;
SELECT caterva_blocks_read() - n FROM n0;
SELECT caterva_version() = caterva_version();

-- Errors.
SELECT caterva_info('no-such-file');
SELECT caterva_info(NULL);
SELECT caterva_info('garbage.b2nd');
SELECT caterva_slice('grid.b2nd', '[0,0]');
SELECT caterva_slice('grid.b2nd', '[0]', '[1,1]');
SELECT caterva_slice('grid.b2nd', '[0,0,0]', '[1,1,1]');
SELECT caterva_slice('grid.b2nd', '[0,0]', '[5,5]');
SELECT caterva_slice('grid.b2nd', '[2,0]', '[1,1]');
SELECT caterva_slice('grid.b2nd', '[-1,0]', '[1,1]');
SELECT caterva_slice('grid.b2nd', '[a,0]', '[1,1]');
SELECT caterva_slice('grid.b2nd', '[0,0] x', '[1,1]');
SELECT caterva_slice('grid.b2nd', '[99999999999999999999,0]', '[1,1]');
SELECT caterva_slice('truncated.b2nd');
