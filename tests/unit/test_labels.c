/*
 * test_labels.c -- coordinates: calendars against known dates, CF time units, ISO text round
 * trips, label lookups against brute force, and the `_coords` attribute stored in files
 * (round trip, validation, malformed bytes, growth beyond explicit labels).
 */
#include "caterva.h"
#include "caterva_array.h"
#include "fsutil.h"
#include "tap.h"
#include "testrng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static caterva_ctx *ctx;
static char tmpdir[256];

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}

/* A daily axis "days since 1970-01-01" in calendar cal starting at day d0: key(i) / 86400000
** is day d0 + i. */
static int day_axis(const char *cal, int64_t d0, int64_t n, caterva_labels *l) {
  caterva_coord c;
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_REGULAR;
  c.start = (double)d0;
  c.step = 1;
  c.units = "days since 1970-01-01";
  c.calendar = cal;
  return caterva_labels_init(ctx, l, &c, n);
}

/* Day number of date text in calendar cal, or NAN when it is not a date there. */
static double day_of(const char *cal, const char *text) {
  caterva_labels l;
  double k;
  if (day_axis(cal, 0, 1, &l) != 0 || caterva_labels_parse_time(ctx, &l, text, &k) != 0) return NAN;
  return k / 86400000.0;
}

/* Text of day number d in calendar cal. */
static const char *text_of(const char *cal, int64_t d) {
  static char buf[64];
  caterva_labels l;
  if (day_axis(cal, d, 1, &l) != 0 || caterva_labels_format(&l, 0, buf, sizeof buf)) return "(error)";
  return buf;
}

static void test_calendars(void) {
  /* Proleptic Gregorian facts (Python's date.toordinal agrees: 1970-01-01 is ordinal 719163). */
  tap_ok(day_of("proleptic_gregorian", "1970-01-01") == 0, "epoch is day 0");
  tap_ok(day_of("proleptic_gregorian", "1969-12-31") == -1, "the day before the epoch is -1");
  tap_ok(day_of("proleptic_gregorian", "0001-01-01") == -719162, "0001-01-01 is day -719162");
  tap_ok(day_of("proleptic_gregorian", "2000-03-01") == 11017, "2000-03-01 is day 11017");
  tap_ok(day_of("proleptic_gregorian", "2000-02-29") == 11016, "2000 is a leap year");
  tap_ok(isnan(day_of("proleptic_gregorian", "1900-02-29")), "1900 is not a leap year");
  tap_ok(isnan(day_of("proleptic_gregorian", "2023-02-30")), "no February 30");
  /* The standard calendar: Julian until 1582-10-04, then Gregorian from 1582-10-15. */
  tap_ok(day_of("standard", "1582-10-15") - day_of("standard", "1582-10-04") == 1,
         "standard: 1582-10-04 is followed by 1582-10-15");
  tap_ok(isnan(day_of("standard", "1582-10-10")), "standard: 1582-10-10 does not exist");
  tap_ok(day_of("standard", "1582-10-04") == day_of("proleptic_gregorian", "1582-10-14"),
         "Julian 1582-10-04 is proleptic Gregorian 1582-10-14");
  tap_ok(!isnan(day_of("gregorian", "1500-02-29")), "standard: 1500 is a Julian leap year");
  tap_ok(isnan(day_of("proleptic_gregorian", "1500-02-29")), "proleptic: 1500 is not");
  tap_ok(day_of("standard", "1000-03-01") - day_of("standard", "1000-02-28") == 2,
         "standard: Julian 1000-02-29 exists");
  tap_ok(day_of("standard", "2023-08-01") == day_of("proleptic_gregorian", "2023-08-01"),
         "standard and proleptic agree after 1582");
  tap_ok(day_of("standard", "1582-10-04") - day_of("proleptic_gregorian", "1582-10-04") == 10,
         "ten days between the rules in 1582");
  /* Other calendars. */
  tap_ok(day_of("noleap", "2001-01-01") - day_of("noleap", "2000-01-01") == 365, "noleap year");
  tap_ok(isnan(day_of("365_day", "2024-02-29")), "365_day has no February 29");
  tap_ok(day_of("all_leap", "2023-03-01") - day_of("all_leap", "2023-02-28") == 2, "all_leap");
  tap_ok(day_of("366_day", "2024-01-01") - day_of("366_day", "2023-01-01") == 366, "366_day year");
  tap_ok(day_of("360_day", "2023-03-01") - day_of("360_day", "2023-02-30") == 1,
         "360_day: February 30 is followed by March 1");
  tap_ok(day_of("360_day", "2024-01-01") - day_of("360_day", "2023-01-01") == 360, "360_day year");
  tap_ok(isnan(day_of("360_day", "2023-01-31")), "360_day has no 31st");
  tap_ok(day_of("noleap", "1969-12-31") == -1 && day_of("360_day", "1969-12-30") == -1,
         "dates before 1970 in noleap and 360_day");
  /* Text round trips over long spans, every calendar. */
  {
    static const char *cals[] = {"standard", "proleptic_gregorian", "noleap", "all_leap", "360_day"};
    for (int c = 0; c < 5; c++) {
      int ok = 1;
      int64_t prev_day = 0;
      for (int64_t d = -690000; d < 2800000 && ok; d += 1 + (int64_t)(rnd() % 97)) {
        const char *t = text_of(cals[c], d);
        double back = day_of(cals[c], t);
        ok = back == (double)d;
        if (!ok) tap_diag("%s: day %lld -> %s -> %f", cals[c], (long long)d, t, back);
        prev_day = d;
      }
      (void)prev_day;
      tap_ok(ok, "%s: day -> text -> day over years 80..9600", cals[c]);
    }
  }
  tap_ok(strcmp(text_of("standard", -141428), "1582-10-04") == 0 &&
             strcmp(text_of("standard", -141427), "1582-10-15") == 0,
         "standard: the text of the days around the switch");
}

static void test_units(void) {
  caterva_coord c;
  caterva_labels l;
  char buf[64];
  double k;
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_REGULAR;
  c.start = 0;
  c.step = 6;
  c.units = "hours since 2023-1-1 0:0:0";
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 && l.is_time && l.resolution == 1,
         "CF units with unpadded fields; hourly axis shows times");
  tap_ok(caterva_labels_format(&l, 3, buf, sizeof buf) == 0 &&
             strcmp(buf, "2023-01-01T18:00:00") == 0, "index 3 of 6-hourly: %s", buf);
  tap_ok(caterva_labels_parse_time(ctx, &l, "2023-01-01T18:00:00", &k) == 0 &&
             k == caterva_labels_key(&l, 3), "its text parses to its key");
  tap_ok(caterva_labels_parse_time(ctx, &l, "2023-01-01 18:00", &k) == 0 &&
             k == caterva_labels_key(&l, 3), "a space and no seconds: same key");
  tap_ok(caterva_labels_parse_time(ctx, &l, "2023-13-01", &k) < 0, "month 13 is an error");
  tap_ok(caterva_labels_parse_time(ctx, &l, "yesterday", &k) < 0, "words are an error");
  tap_ok(caterva_labels_parse_time(ctx, &l, "2023-01-01x", &k) < 0, "trailing junk is an error");
  c.units = "days since 2000-01-01T00:00:00Z";
  c.step = 1;
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 && l.resolution == 0, "Z suffix; daily");
  c.units = "days since 2000-01-01 00:00:00 +05:00";
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) < 0, "non-zero UTC offsets are refused");
  c.units = "months since 2000-01-01";
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) < 0, "months are not a fixed unit: refused");
  c.units = "degrees_north";
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 && !l.is_time, "plain units are numbers");
  c.units = "days since 2000-01-01";
  c.calendar = "julian";
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) < 0, "unknown calendar is refused");
  c.calendar = "";
  c.start = 0.5;
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 && l.resolution == 1 &&
             caterva_labels_format(&l, 0, buf, sizeof buf) == 0 &&
             strcmp(buf, "2000-01-01T12:00:00") == 0, "half days show times: %s", buf);
  c.start = 0.0001;
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 && l.resolution == 2, "milliseconds show");
}

/* Brute force: indices of [0, n) whose key compares to k as op says. */
static int brute(const caterva_labels *l, int op, double k, int64_t i) {
  double x = caterva_labels_key(l, i);
  switch (op) {
    case CATERVA_CMP_EQ: return x == k;
    case CATERVA_CMP_LT: return x < k;
    case CATERVA_CMP_LE: return x <= k;
    case CATERVA_CMP_GT: return x > k;
    default: return x >= k;
  }
}

static void test_search(void) {
  double vals[300];
  int bad = 0, cases = 0, nbad = 0;
  for (int t = 0; t < 400; t++) {
    caterva_coord c;
    caterva_labels l;
    int64_t n = (int64_t)(rnd() % 200);
    int dir = rnd() % 2 ? 1 : -1;
    memset(&c, 0, sizeof c);
    if (t % 2) {
      c.kind = CATERVA_COORD_REGULAR;
      c.start = (double)(int64_t)(rnd() % 2001) / 10.0 - 100.0;
      c.step = dir * (0.1 + (double)(rnd() % 30) / 7.0);
    } else {
      double v = (double)(int64_t)(rnd() % 100) - 50.0;
      c.kind = CATERVA_COORD_EXPLICIT;
      for (int64_t i = 0; i < n; i++) {
        vals[i] = v;
        v += dir * (0.25 + (double)(rnd() % 40) / 8.0);
      }
      c.values = vals;
      c.nvalues = n;
    }
    if (caterva_labels_init(ctx, &l, &c, n) != 0) {
      bad++;
      continue;
    }
    for (int q = 0; q < 60; q++) {
      double k;
      int op = CATERVA_CMP_EQ + (int)(rnd() % 5); /* EQ, LT, LE, GT, GE */
      int64_t lo, hi;
      if (n > 0 && rnd() % 2) k = caterva_labels_key(&l, (int64_t)(rnd() % (uint64_t)n));
      else k = (double)(int64_t)(rnd() % 4001) / 10.0 - 200.0;
      caterva_labels_range(&l, op, k, &lo, &hi);
      cases++;
      for (int64_t i = 0; i < n; i++) {
        if (brute(&l, op, k, i) != (i >= lo && i <= hi)) {
          if (nbad++ < 5) tap_diag("case %d op %d k %.17g: index %lld", t, op, k, (long long)i);
          break;
        }
      }
      if (n > 0) {
        int64_t j = caterva_labels_nearest(&l, k), best = 0;
        for (int64_t i = 1; i < n; i++)
          if (fabs(caterva_labels_key(&l, i) - k) < fabs(caterva_labels_key(&l, best) - k)) best = i;
        if (fabs(caterva_labels_key(&l, j) - k) != fabs(caterva_labels_key(&l, best) - k)) nbad++;
      }
    }
  }
  tap_ok(bad == 0 && nbad == 0, "range and nearest equal brute force in %d lookups", cases);
}

static caterva_array *new_array(const char *name, int64_t n0, int64_t n1) {
  caterva_array_params p;
  caterva_array *a = NULL;
  char path[300];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = n0;
  p.shape[1] = n1;
  p.chunkshape[0] = p.chunkshape[1] = 4;
  p.blockshape[0] = p.blockshape[1] = 2;
  p.dtype = "float64";
  p.store = CATERVA_STORE_CONTIGUOUS;
  p.path = path;
  if (caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) != 0) return NULL;
  return a;
}

static void test_store(void) {
  caterva_array *a = new_array("c.b2nd", 5, 3), *b = NULL;
  caterva_coord c, g;
  double lat[5] = {60, 45, 30, 15, 0}, bad[5] = {0, 1, 1, 2, 3}, big[7] = {0, 1, 2, 3, 4, 5, 6};
  char path[300];
  int64_t shape[2] = {7, 3};
  snprintf(path, sizeof path, "%s/c.b2nd", tmpdir);
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_EXPLICIT;
  c.values = lat;
  c.nvalues = 5;
  c.units = "degrees_north";
  tap_ok(a && caterva_array_set_coord(ctx, a, 0, &c) == 0, "explicit decreasing labels set");
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_REGULAR;
  c.start = 0;
  c.step = 1;
  c.units = "days since 2023-01-01";
  c.calendar = "noleap";
  tap_ok(a && caterva_array_set_coord(ctx, a, 1, &c) == 0, "regular time labels set");
  caterva_array_free(a);
  tap_ok(caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &b) == 0, "reopened");
  tap_ok(b && caterva_array_get_coord(ctx, b, 0, &g) == 0 && g.kind == CATERVA_COORD_EXPLICIT &&
             g.nvalues == 5 && memcmp(g.values, lat, sizeof lat) == 0 &&
             strcmp(g.units, "degrees_north") == 0 && strcmp(g.calendar, "") == 0,
         "explicit labels read back");
  tap_ok(b && caterva_array_get_coord(ctx, b, 1, &g) == 0 && g.kind == CATERVA_COORD_REGULAR &&
             g.start == 0 && g.step == 1 && strcmp(g.units, "days since 2023-01-01") == 0 &&
             strcmp(g.calendar, "noleap") == 0, "regular labels read back");
  tap_ok(b && caterva_array_get_coord(ctx, b, 2, &g) == CATERVA_E_INVALID, "no dimension 2");
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_EXPLICIT;
  c.values = bad;
  c.nvalues = 5;
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, &c) == CATERVA_E_INVALID, "repeated label refused");
  c.nvalues = 2;
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, &c) == CATERVA_E_INVALID, "too few labels refused");
  tap_ok(b && caterva_array_get_coord(ctx, b, 0, &g) == 0 && g.nvalues == 5,
         "a refused set leaves the labels");
  tap_ok(b && caterva_array_resize(ctx, b, shape) == CATERVA_E_RANGE,
         "growing beyond explicit labels is refused");
  c.values = big;
  c.nvalues = 7;
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, &c) == 0 && caterva_array_resize(ctx, b, shape) == 0,
         "with labels for the new indices it grows");
  c.kind = CATERVA_COORD_REGULAR;
  c.start = 1;
  c.step = 0;
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, &c) == CATERVA_E_INVALID, "step 0 refused");
  c.step = NAN;
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, &c) == CATERVA_E_INVALID, "NaN step refused");
  tap_ok(b && caterva_array_set_coord(ctx, b, 0, NULL) == 0 && caterva_array_set_coord(ctx, b, 1, NULL) == 0 &&
             caterva_array_get_coord(ctx, b, 1, &g) == 0 && g.kind == CATERVA_COORD_NONE,
         "coordinates removed");
  {
    uint8_t *v = NULL;
    int32_t len = 0;
    tap_ok(b && caterva_array_attr_get(ctx, b, "_coords", &v, &len) == CATERVA_E_NOTFOUND,
           "no coordinate left: no attribute");
    free(v);
  }
  caterva_array_free(b);
}

/* Malformed `_coords` bytes: a clear CORRUPT error from get, never a crash; the array still
 * opens and reads. */
static void test_malformed(void) {
  static const struct {
    const char *what;
    const char *bytes;
    int len;
  } cases[] = {
      {"not a map", "\x93\x01\x02\x03", 4},
      {"dims too short", "\x81\xa4" "dims" "\x91\xc0", 8},
      {"dim not a map", "\x81\xa4" "dims" "\x92\x05\xc0", 9},
      {"no kind", "\x81\xa4" "dims" "\x92\x81\xa5" "start" "\x01\xc0", 16},
      {"unknown kind", "\x81\xa4" "dims" "\x92\x81\xa4" "kind" "\xa3" "odd\xc0", 18},
      {"values count beyond bytes", "\x81\xa4" "dims" "\x92\x82\xa4" "kind" "\xa8" "explicit"
                                    "\xa6" "values" "\xdd\x7f\xff\xff\xff\xc0", 35},
      {"truncated", "\x81\xa4" "dims" "\x92\x82\xa4" "kind", 13},
      {"version 2", "\x81\xa7" "version" "\x02", 10},
      {"step zero", "\x81\xa4" "dims" "\x92\x83\xa4" "kind" "\xa7" "regular" "\xa5" "start"
                    "\x00\xa4" "step" "\x00\xc0", 36},
  };
  int nok = 0, n = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < n; i++) {
    char name[32];
    caterva_array *a;
    caterva_coord g;
    double x = -1;
    int64_t at[2] = {0, 0}, to[2] = {1, 1};
    int rc;
    snprintf(name, sizeof name, "m%d.b2nd", i);
    a = new_array(name, 4, 4);
    if (a == NULL) continue;
    caterva_array_attr_set(ctx, a, "_coords", cases[i].bytes, cases[i].len);
    rc = caterva_array_get_coord(ctx, a, 0, &g);
    if ((rc == CATERVA_E_CORRUPT || rc == CATERVA_E_UNSUPPORTED) &&
        caterva_array_get_slice(ctx, a, at, to, &x, sizeof x) == 0 && x == 0)
      nok++;
    else
      tap_diag("%s: rc %d", cases[i].what, rc);
    caterva_array_free(a);
  }
  tap_ok(nok == n, "%d malformed _coords attributes: clear errors, array still reads", n);
}

/* Field f (every n) of the instant given as text in calendar cal, or -9999 on an error. */
static int64_t field_of(const char *cal, const char *text, int f, int64_t n) {
  caterva_labels l;
  int64_t key = -9999;
  double d = day_of(cal, text);
  if (isnan(d) || day_axis(cal, (int64_t)d, 1, &l) != 0 ||
      caterva_labels_field(&l, f, n, 0, &key) != 0)
    return -9999;
  return key;
}

/* The text of period key of field f (every n) in calendar cal. */
static const char *period_of(const char *cal, int f, int64_t n, int64_t key) {
  static char buf[32];
  caterva_labels l;
  if (day_axis(cal, 0, 1, &l) != 0 ||
      caterva_labels_period_format(&l, f, n, key, buf, sizeof buf) != 0)
    return "(error)";
  return buf;
}

static void test_fields(void) {
  caterva_labels l;
  caterva_coord c;
  int64_t key = 0;
  tap_ok(field_of("proleptic_gregorian", "2023-06-15", CATERVA_FIELD_YEAR, 1) == 2023 &&
             field_of("proleptic_gregorian", "2023-06-15", CATERVA_FIELD_MONTH, 1) == 6 &&
             field_of("proleptic_gregorian", "2023-06-15", CATERVA_FIELD_SEASON, 1) == 2 &&
             field_of("proleptic_gregorian", "2023-06-15", CATERVA_FIELD_DAYOFYEAR, 1) == 166,
         "fields: 2023-06-15 is year 2023, month 6, JJA, day 166");
  tap_ok(field_of("standard", "2023-12-01", CATERVA_FIELD_SEASON, 1) == 0 &&
             field_of("standard", "2024-02-29", CATERVA_FIELD_SEASON, 1) == 0 &&
             field_of("standard", "2024-03-01", CATERVA_FIELD_SEASON, 1) == 1 &&
             field_of("standard", "2024-11-30", CATERVA_FIELD_SEASON, 1) == 3,
         "seasons: December and February are DJF, March MAM, November SON");
  tap_ok(field_of("noleap", "2024-12-31", CATERVA_FIELD_DAYOFYEAR, 1) == 365 &&
             field_of("all_leap", "2023-12-31", CATERVA_FIELD_DAYOFYEAR, 1) == 366 &&
             field_of("360_day", "2023-12-30", CATERVA_FIELD_DAYOFYEAR, 1) == 360 &&
             field_of("proleptic_gregorian", "2024-12-31", CATERVA_FIELD_DAYOFYEAR, 1) == 366,
         "day of year: the last day is 365 (noleap), 366 (all_leap, 2024), 360 (360_day)");
  tap_ok(field_of("standard", "1582-10-15", CATERVA_FIELD_DAYOFYEAR, 1) == 278 &&
             field_of("standard", "1582-12-31", CATERVA_FIELD_DAYOFYEAR, 1) == 355,
         "standard 1582: 1582-10-15 is the 278th day, the year has 355");
  tap_ok(field_of("proleptic_gregorian", "1970-01-01", CATERVA_FIELD_DAYS, 7) == 0 &&
             field_of("proleptic_gregorian", "1970-01-07", CATERVA_FIELD_DAYS, 7) == 0 &&
             field_of("proleptic_gregorian", "1970-01-08", CATERVA_FIELD_DAYS, 7) == 1 &&
             field_of("proleptic_gregorian", "1969-12-31", CATERVA_FIELD_DAYS, 7) == -1,
         "7-day periods from 1970-01-01, also before it");
  tap_ok(strcmp(period_of("proleptic_gregorian", CATERVA_FIELD_DAYS, 7, -1), "1969-12-25") == 0,
         "the 7-day period before the epoch starts on 1969-12-25 (%s)",
         period_of("proleptic_gregorian", CATERVA_FIELD_DAYS, 7, -1));
  key = field_of("noleap", "2023-05-10", CATERVA_FIELD_MONTHS, 3);
  tap_ok(strcmp(period_of("noleap", CATERVA_FIELD_MONTHS, 3, key), "2023-04-01") == 0,
         "3-month periods are quarters: 2023-05-10 is in the one of 2023-04-01");
  key = field_of("360_day", "2023-07-30", CATERVA_FIELD_YEARS, 10);
  tap_ok(key == 202 && strcmp(period_of("360_day", CATERVA_FIELD_YEARS, 10, key),
                              "2020-01-01") == 0, "10-year periods: 2020-2029");
  tap_ok(strcmp(period_of("360_day", CATERVA_FIELD_DAYS, 1, 59), "1970-02-30") == 0,
         "360_day: day 59 is 1970-02-30");
  memset(&c, 0, sizeof c);
  c.kind = CATERVA_COORD_REGULAR;
  c.start = -89.5;
  c.step = 1;
  tap_ok(caterva_labels_init(ctx, &l, &c, 10) == 0 &&
             caterva_labels_field(&l, CATERVA_FIELD_MONTH, 1, 0, &key) == CATERVA_E_RANGE,
         "a coordinate that is not a time has no calendar fields");
}

int main(void) {
  if (caterva_ctx_new(1, &ctx) != 0) return 1;
  snprintf(tmpdir, sizeof tmpdir, "%s/test_labels.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return 1;
  test_calendars();
  test_fields();
  test_units();
  test_search();
  test_store();
  test_malformed();
  tu_rm_tree(tmpdir);
  caterva_ctx_free(ctx);
  return tap_done();
}
