/*
 * mkdemo.c -- write the demo's sample data: a year of daily near-surface temperatures on a
 * global grid, and a table of weather stations.
 *
 *   mkdemo [-c chunks] [-b blocks] [-l clevel] [-z codec] [-f filters] DIR [NTIME NLAT NLON]
 *
 * writes into the directory DIR (created if missing):
 *   temp.b2nd     float32 array of shape NTIME x NLAT x NLON (default 365 x 180 x 360: one
 *                 year, a 1-degree grid with cell centres at lat -89.5 .. 89.5 and lon
 *                 -179.5 .. 179.5), dimension names time, lat, lon, attributes
 *                 units = "degC", long_name, and the grid's origin and spacing;
 *   precip.b2nd   the same grid's daily precipitation (mm, float32), a second variable;
 *   stations.sql  CREATE TABLE stations(name, lat, lon) and about 40 cities, in degrees.
 * The array's coordinates (the `_coords` attribute) label time with dates of 2023 and lat
 * and lon with degrees, so SQL selects by date and degree.
 * -c and -b give the chunk and block shapes ("30,90,90"), -l the Zstd level, -z the codec
 * (zstd, lz4, blosclz, zlib), -f the filters (shuffle, bitshuffle, or truncN: keep N mantissa
 * bits, then shuffle): for measuring; the defaults are what the demo uses.
 *
 * The field is synthetic but plausible: ~30 degC at the equator falling to ~-25 degC at the
 * poles, a seasonal cycle that grows with latitude, is stronger over the (smooth, elliptic)
 * continents and is opposite in the two hemispheres, travelling "weather" waves, and a small
 * deterministic noise. Everything is a pure function of the indices: the output is the same
 * on every run.
 */
#include "caterva.h"
#include "caterva_array.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define DEG (M_PI / 180.0)

/* Continents as ellipses in (lon, lat) degrees: centre and half-axes. */
static const struct {
  double lon, lat, alon, alat;
} continents[] = {
    {80.0, 50.0, 78.0, 24.0},    /* Eurasia */
    {20.0, 5.0, 24.0, 32.0},     /* Africa */
    {45.0, 24.0, 14.0, 10.0},    /* Arabia */
    {-100.0, 48.0, 36.0, 22.0},  /* North America */
    {-42.0, 72.0, 16.0, 10.0},   /* Greenland */
    {-60.0, -15.0, 18.0, 36.0},  /* South America */
    {134.0, -25.0, 18.0, 12.0},  /* Australia */
};

/* How much land is at (lon, lat): 0 (open sea) .. 1 (inland), smooth at the coasts. */
static double landness(double lon, double lat) {
  double best = lat < -68.0 ? 1.0 : lat < -62.0 ? (-62.0 - lat) / 6.0 : 0.0;  /* Antarctica */
  size_t i;
  for (i = 0; i < sizeof(continents) / sizeof(continents[0]); i++) {
    double dx = (lon - continents[i].lon) / continents[i].alon;
    double dy = (lat - continents[i].lat) / continents[i].alat;
    double r = sqrt(dx * dx + dy * dy), v;
    if (r >= 1.15) continue;
    v = r <= 0.85 ? 1.0 : (1.15 - r) / 0.3;
    v = v * v * (3.0 - 2.0 * v);  /* smoothstep */
    if (v > best) best = v;
  }
  return best;
}

/* A deterministic hash of the indices mapped to [-1, 1). */
static double noise(uint32_t t, uint32_t i, uint32_t j) {
  uint32_t h = t * 0x9E3779B1u ^ i * 0x85EBCA77u ^ j * 0xC2B2AE3Du;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return (double)(h >> 8) / 8388608.0 - 1.0;
}

/*
 * Temperature (degC) on day t (0 = 1 January) at (lat, lon) degrees:
 *   mean:      30 - 55 (|lat| / 90)^2, colder inland at high latitudes;
 *   seasons:   amplitude (4 + 16 land) sin(|lat|)^1.5 (+0.5), coldest around 15 January in
 *              the north and 15 July in the south;
 *   weather:   waves travelling east, stronger at mid and high latitudes;
 *   noise:     +-0.4.
 */
static double temperature(int t, double lat, double lon, double land, double weather_amp,
                          uint32_t ti, uint32_t ii, uint32_t ji) {
  double alat = fabs(lat) / 90.0;
  double mean = 30.0 - 55.0 * alat * alat - 10.0 * land * alat;
  double amp = 0.5 + (4.0 + 16.0 * land) * pow(sin(fabs(lat) * DEG), 1.5);
  double phase = cos(2.0 * M_PI * (t - 15.5) / 365.0);  /* +1 mid January */
  double season = (lat >= 0 ? -amp : amp) * phase;
  double weather = weather_amp * (sin(2.0 * M_PI * t / 6.3 - 3.0 * lon * DEG + 2.0 * lat * DEG) +
                                  0.5 * sin(2.0 * M_PI * t / 17.0 + 2.0 * lon * DEG));
  return mean + season + weather + 0.4 * noise(ti, ii, ji);
}

/* Cities: name, latitude, longitude (degrees, approximate). */
static const struct {
  const char *name;
  double lat, lon;
} cities[] = {
    {"Reykjavik", 64.15, -21.94},  {"Oslo", 59.91, 10.75},        {"Helsinki", 60.17, 24.94},
    {"London", 51.51, -0.13},      {"Paris", 48.86, 2.35},        {"Berlin", 52.52, 13.40},
    {"Madrid", 40.42, -3.70},      {"Rome", 41.90, 12.50},        {"Moscow", 55.76, 37.62},
    {"Istanbul", 41.01, 28.98},    {"Cairo", 30.04, 31.24},       {"Lagos", 6.52, 3.38},
    {"Nairobi", -1.29, 36.82},     {"Kinshasa", -4.44, 15.27},    {"Johannesburg", -26.20, 28.05},
    {"Cape Town", -33.92, 18.42},  {"Riyadh", 24.71, 46.68},      {"Tehran", 35.69, 51.39},
    {"Karachi", 24.86, 67.01},     {"Delhi", 28.61, 77.21},       {"Mumbai", 19.08, 72.88},
    {"Bangkok", 13.76, 100.50},    {"Singapore", 1.35, 103.82},   {"Jakarta", -6.21, 106.85},
    {"Beijing", 39.90, 116.41},    {"Shanghai", 31.23, 121.47},   {"Tokyo", 35.68, 139.69},
    {"Yakutsk", 62.03, 129.73},    {"Novosibirsk", 55.01, 82.93}, {"Sydney", -33.87, 151.21},
    {"Perth", -31.95, 115.86},     {"Auckland", -36.85, 174.76},  {"Honolulu", 21.31, -157.86},
    {"Anchorage", 61.22, -149.90}, {"Vancouver", 49.28, -123.12}, {"Los Angeles", 34.05, -118.24},
    {"Chicago", 41.88, -87.63},    {"New York", 40.71, -74.01},   {"Mexico City", 19.43, -99.13},
    {"Bogota", 4.71, -74.07},      {"Lima", -12.05, -77.04},      {"Sao Paulo", -23.55, -46.63},
    {"Buenos Aires", -34.60, -58.38}, {"McMurdo Station", -77.85, 166.67},
};

static int parse3(const char *s, int32_t *out) {
  return sscanf(s, "%d,%d,%d", &out[0], &out[1], &out[2]) == 3 && out[0] > 0 && out[1] > 0 &&
         out[2] > 0;
}

static int codec_id(const char *s) {
  if (strcmp(s, "blosclz") == 0) return CATERVA_BLOSCLZ;
  if (strcmp(s, "lz4") == 0) return CATERVA_LZ4;
  if (strcmp(s, "zlib") == 0) return CATERVA_ZLIB;
  if (strcmp(s, "zstd") == 0) return CATERVA_ZSTD;
  return -1;
}

/* A msgpack str (fixstr or str8) of s appended at buf[*n]; buf has room for 2 + 255 bytes. */
static void mp_str(uint8_t *buf, int32_t *n, const char *s) {
  size_t len = strlen(s);
  if (len < 32) {
    buf[(*n)++] = (uint8_t)(0xa0 | len);
  } else {
    buf[(*n)++] = 0xd9;
    buf[(*n)++] = (uint8_t)len;
  }
  memcpy(buf + *n, s, len);
  *n += (int32_t)len;
}

/* A msgpack float64 appended at buf[*n]. */
static void mp_f64(uint8_t *buf, int32_t *n, double v) {
  uint64_t u;
  int k;
  memcpy(&u, &v, 8);
  buf[(*n)++] = 0xcb;
  for (k = 7; k >= 0; k--) buf[(*n)++] = (uint8_t)(u >> (8 * k));
}

static int set_attr_str(caterva_ctx *ctx, caterva_array *a, const char *name, const char *v) {
  uint8_t buf[300];
  int32_t n = 0;
  mp_str(buf, &n, v);
  return caterva_array_attr_set(ctx, a, name, buf, n);
}

static int set_attr_f64(caterva_ctx *ctx, caterva_array *a, const char *name, double v) {
  uint8_t buf[16];
  int32_t n = 0;
  mp_f64(buf, &n, v);
  return caterva_array_attr_set(ctx, a, name, buf, n);
}

/* Daily precipitation in mm (0.1 mm steps, often 0): a tropical rain belt that follows the
** sun (8 degrees north in July, south in January), storm tracks near 45 degrees carried by
** the same travelling waves as the temperature, drier continental interiors. */
static double precipitation(int t, double lat, double lon, double land, uint32_t ti,
                            uint32_t ii, uint32_t ji) {
  double c = 8.0 * sin(2.0 * M_PI * (t - 80) / 365.0);
  double belt = 12.0 * exp(-((lat - c) / 9.0) * ((lat - c) / 9.0));
  double storms = 3.0 * exp(-((fabs(lat) - 45.0) / 12.0) * ((fabs(lat) - 45.0) / 12.0)) *
                  (1.0 + sin(2.0 * M_PI * t / 6.3 - 3.0 * lon * DEG + 2.0 * lat * DEG));
  double r = (belt + storms) * (1.0 - 0.6 * land) + 2.0 * noise(ti + 7u, ii, ji) - 1.0;
  return r < 0.0 ? 0.0 : floor(r * 10.0 + 0.5) / 10.0;
}

/* Coordinates: days of 2023 (or nt instants spread over it), cell-centre latitudes and
** longitudes in degrees. */
static int set_coords(caterva_ctx *ctx, caterva_array *a, int nt, double dlat, double dlon) {
  caterva_coord c;
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_REGULAR;
  c.start = 0;
  c.step = 365.0 / nt;
  c.units = "days since 2023-01-01";
  c.calendar = "standard";
  if (caterva_array_set_coord(ctx, a, 0, &c) < 0) return -1;
  c.start = -90.0 + dlat / 2;
  c.step = dlat;
  c.units = "degrees_north";
  c.calendar = "";
  if (caterva_array_set_coord(ctx, a, 1, &c) < 0) return -1;
  c.start = -180.0 + dlon / 2;
  c.step = dlon;
  c.units = "degrees_east";
  return caterva_array_set_coord(ctx, a, 2, &c);
}

static int write_stations(const char *dir) {
  char path[4096];
  FILE *f;
  size_t i;
  snprintf(path, sizeof(path), "%s/stations.sql", dir);
  f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "mkdemo: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f, "-- Weather stations: approximate coordinates in degrees.\n"
             "CREATE TABLE IF NOT EXISTS stations(name TEXT PRIMARY KEY, lat REAL, lon REAL);\n"
             "BEGIN;\n");
  for (i = 0; i < sizeof(cities) / sizeof(cities[0]); i++)
    fprintf(f, "INSERT OR REPLACE INTO stations VALUES('%s', %.2f, %.2f);\n",
            cities[i].name, cities[i].lat, cities[i].lon);
  fprintf(f, "COMMIT;\n");
  if (fclose(f) != 0) {
    fprintf(stderr, "mkdemo: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  caterva_array_params p;
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  int32_t chunks[3] = {30, 90, 90}, blocks[3] = {10, 15, 30};
  int nt = 365, nlat = 180, nlon = 360, clevel = 5, codec = CATERVA_ZSTD, opt, k, rc = 1;
  int64_t shape[3];
  double *lat = NULL, *lon = NULL, *land = NULL, *wamp = NULL, dlat, dlon;
  float *buf = NULL;
  char path[4096];
  const char *dir;
  const char *names[3] = {"time", "lat", "lon"};
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int t, i, j;

  const char *filters = "shuffle";
  while ((opt = getopt(argc, argv, "c:b:l:z:f:")) != -1) {
    switch (opt) {
      case 'c': if (!parse3(optarg, chunks)) goto usage; break;
      case 'b': if (!parse3(optarg, blocks)) goto usage; break;
      case 'l': clevel = atoi(optarg); break;
      case 'z': if ((codec = codec_id(optarg)) < 0) goto usage; break;
      case 'f': filters = optarg; break;
      default: goto usage;
    }
  }
  if (argc - optind != 1 && argc - optind != 4) goto usage;
  dir = argv[optind];
  if (argc - optind == 4) {
    nt = atoi(argv[optind + 1]);
    nlat = atoi(argv[optind + 2]);
    nlon = atoi(argv[optind + 3]);
    if (nt < 1 || nlat < 1 || nlon < 1 || nt > 100000 || nlat > 100000 || nlon > 100000)
      goto usage;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "mkdemo: cannot create %s: %s\n", dir, strerror(errno));
    return 1;
  }
  shape[0] = nt;
  shape[1] = nlat;
  shape[2] = nlon;
  for (k = 0; k < 3; k++) {
    if (chunks[k] > shape[k]) chunks[k] = (int32_t)shape[k];
    if (blocks[k] > chunks[k]) blocks[k] = chunks[k];
  }

  /* The field, computed from per-latitude and per-longitude terms. */
  dlat = 180.0 / nlat;
  dlon = 360.0 / nlon;
  lat = malloc(sizeof(double) * (size_t)nlat);
  lon = malloc(sizeof(double) * (size_t)nlon);
  land = malloc(sizeof(double) * (size_t)nlat * (size_t)nlon);
  wamp = malloc(sizeof(double) * (size_t)nlat);
  buf = malloc(sizeof(float) * (size_t)nt * (size_t)nlat * (size_t)nlon);
  if (!lat || !lon || !land || !wamp || !buf) {
    fprintf(stderr, "mkdemo: out of memory\n");
    goto done;
  }
  for (i = 0; i < nlat; i++) {
    lat[i] = -90.0 + (i + 0.5) * dlat;
    wamp[i] = 3.5 * pow(sin(fabs(lat[i]) * DEG), 1.2);
  }
  for (j = 0; j < nlon; j++) lon[j] = -180.0 + (j + 0.5) * dlon;
  for (i = 0; i < nlat; i++)
    for (j = 0; j < nlon; j++) land[(size_t)i * nlon + j] = landness(lon[j], lat[i]);
  for (t = 0; t < nt; t++) {
    /* Days spread over the year whatever nt is. */
    int day = nt == 365 ? t : (int)((int64_t)t * 365 / nt);
    float *slab = buf + (size_t)t * nlat * nlon;
    for (i = 0; i < nlat; i++)
      for (j = 0; j < nlon; j++)
        slab[(size_t)i * nlon + j] =
            (float)temperature(day, lat[i], lon[j], land[(size_t)i * nlon + j], wamp[i],
                               (uint32_t)t, (uint32_t)i, (uint32_t)j);
  }

  caterva_array_params_init(&p);
  p.ndim = 3;
  for (k = 0; k < 3; k++) {
    p.shape[k] = shape[k];
    p.chunkshape[k] = chunks[k];
    p.blockshape[k] = blocks[k];
  }
  p.dtype = "<f4";
  p.cparams.codec = codec;
  p.cparams.clevel = clevel;
  if (strcmp(filters, "bitshuffle") == 0) {
    p.cparams.filters[5] = CATERVA_BITSHUFFLE;
  } else if (strncmp(filters, "trunc", 5) == 0 && atoi(filters + 5) > 0) {
    p.cparams.filters[4] = CATERVA_TRUNC_PREC;
    p.cparams.filters_meta[4] = (uint8_t)atoi(filters + 5);
  } else if (strcmp(filters, "shuffle") != 0) {
    goto usage;
  }
  p.store = CATERVA_STORE_CONTIGUOUS;
  snprintf(path, sizeof(path), "%s/temp.b2nd", dir);
  p.path = path;
  if (unlink(path) != 0 && errno != ENOENT) {
    fprintf(stderr, "mkdemo: cannot replace %s: %s\n", path, strerror(errno));
    goto done;
  }
  if (caterva_ctx_new(ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu, &ctx) != CATERVA_OK) goto done;
  if (caterva_array_from_buffer(ctx, &p, buf, (int64_t)sizeof(float) * nt * nlat * nlon, &a) <
          0 ||
      caterva_array_set_dim_names(ctx, a, names) < 0 ||
      set_attr_str(ctx, a, "units", "degC") < 0 ||
      set_attr_str(ctx, a, "long_name", "daily mean near-surface air temperature (synthetic)") <
          0 ||
      set_attr_f64(ctx, a, "lat0", -90.0 + dlat / 2) < 0 ||
      set_attr_f64(ctx, a, "dlat", dlat) < 0 ||
      set_attr_f64(ctx, a, "lon0", -180.0 + dlon / 2) < 0 ||
      set_attr_f64(ctx, a, "dlon", dlon) < 0 || set_coords(ctx, a, nt, dlat, dlon) < 0) {
    fprintf(stderr, "mkdemo: %s: %s\n", path, caterva_ctx_errmsg(ctx));
    goto done;
  }
  caterva_array_free(a);
  a = NULL;
  /* The second variable, on the same grid: precip.b2nd. */
  for (t = 0; t < nt; t++) {
    int day = nt == 365 ? t : (int)((int64_t)t * 365 / nt);
    float *slab = buf + (size_t)t * nlat * nlon;
    for (i = 0; i < nlat; i++)
      for (j = 0; j < nlon; j++)
        slab[(size_t)i * nlon + j] = (float)precipitation(
            day, lat[i], lon[j], land[(size_t)i * nlon + j], (uint32_t)t, (uint32_t)i, (uint32_t)j);
  }
  snprintf(path, sizeof(path), "%s/precip.b2nd", dir);
  if (unlink(path) != 0 && errno != ENOENT) {
    fprintf(stderr, "mkdemo: cannot replace %s: %s\n", path, strerror(errno));
    goto done;
  }
  if (caterva_array_from_buffer(ctx, &p, buf, (int64_t)sizeof(float) * nt * nlat * nlon, &a) <
          0 ||
      caterva_array_set_dim_names(ctx, a, names) < 0 ||
      set_attr_str(ctx, a, "units", "mm/day") < 0 ||
      set_attr_str(ctx, a, "name", "precip") < 0 ||
      set_attr_str(ctx, a, "long_name", "daily precipitation (synthetic)") < 0 ||
      set_coords(ctx, a, nt, dlat, dlon) < 0) {
    fprintf(stderr, "mkdemo: %s: %s\n", path, caterva_ctx_errmsg(ctx));
    goto done;
  }
  if (write_stations(dir) != 0) goto done;
  rc = 0;
done:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  free(lat);
  free(lon);
  free(land);
  free(wamp);
  free(buf);
  return rc;
usage:
  fprintf(stderr, "usage: mkdemo [-c chunks] [-b blocks] [-l clevel] [-z codec] [-f filters] "
                  "DIR [NTIME NLAT NLON]\n");
  return 2;
}
