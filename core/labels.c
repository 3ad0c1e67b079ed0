/*
 * labels.c -- coordinate labels: calendars, CF time units, ISO 8601 text, and lookups of
 * labels over a dimension's indices. Pure functions: no file, no allocation.
 *
 * Keys. Every lookup compares keys, which order like the labels:
 *   numbers        key(i) = label(i)
 *   instants       key(i) = origin_ms + label(i) * unit_ms, rounded to 1 ms
 * where origin_ms is the reference date of "<unit> since <date>" as milliseconds from
 * 1970-01-01T00:00:00 counted in the coordinate's own calendar (in 360_day, 1970-02-30 is
 * day 59). Keys of instants are integers below 2^53 for years 1..9999, so doubles hold them
 * exactly and two texts that denote one instant have one key.
 *
 * Calendars (CF conventions, section 4.4.1):
 *   standard, gregorian   Julian up to 1582-10-04, Gregorian from 1582-10-15 (the ten days
 *                         between do not exist)
 *   proleptic_gregorian   Gregorian rules for every year
 *   noleap, 365_day       no February 29
 *   all_leap, 366_day     February 29 in every year
 *   360_day               twelve months of 30 days
 * Day numbers of the Gregorian and Julian rules come from a March-based year, in which the
 * leap day is the last day of the year, so a year's day of year is (153 * month' + 2) / 5.
 *
 * Lookups bisect over indices, computing key(i) on the fly, so regular and explicit
 * coordinates, increasing or decreasing, share one exact search: the range of indices whose
 * key satisfies a comparison is the set SQLite would select comparing the column's values.
 */
#include "cat_internal.h"

#include "caterva_array.h"

#include <math.h>
#include <stdio.h>

#define MS_PER_DAY 86400000.0

/* ---- calendars ---------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* Day number of a March-based date (year yy from March; mp = 0 for March .. 11 for February)
 * without the leap rule terms, which the callers add. */
static int64_t day_of_mar_year(int64_t mp, int64_t d) { return (153 * mp + 2) / 5 + d - 1; }

static void mar_based(int64_t y, int m, int64_t *yy, int64_t *mp) {
  *yy = m <= 2 ? y - 1 : y;
  *mp = m <= 2 ? m + 9 : m - 3;
}

/* Days from 0000-03-01 (proleptic Gregorian) */
static int64_t gregorian_raw(int64_t y, int m, int d) {
  int64_t yy, mp;
  mar_based(y, m, &yy, &mp);
  return 365 * yy + floor_div(yy, 4) - floor_div(yy, 100) + floor_div(yy, 400) +
         day_of_mar_year(mp, d);
}

/* Days from 0000-03-01 (Julian) */
static int64_t julian_raw(int64_t y, int m, int d) {
  int64_t yy, mp;
  mar_based(y, m, &yy, &mp);
  return 365 * yy + floor_div(yy, 4) + day_of_mar_year(mp, d);
}

/* Offsets putting 1970-01-01 (Gregorian) at day 0, and the Julian calendar where its
 * 1582-10-04 is the day before Gregorian 1582-10-15. */
static int64_t gregorian_days(int64_t y, int m, int d) { return gregorian_raw(y, m, d) - gregorian_raw(1970, 1, 1); }
static int64_t julian_days(int64_t y, int m, int d) {
  return julian_raw(y, m, d) - julian_raw(1582, 10, 4) + gregorian_days(1582, 10, 15) - 1;
}

/* Date of a March-based day count: era of era_days days made of cycles; used for both rules
 * by passing the day counts of 400/100/4-year cycles (Julian: no century rule). */
static void date_from_raw(int64_t raw, int gregorian, int64_t *y, int *m, int *d) {
  int64_t yy, doy, mp;
  if (gregorian) {
    int64_t era = floor_div(raw, 146097), doe = raw - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    yy = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  } else {
    int64_t cyc = floor_div(raw, 1461), doc = raw - cyc * 1461;
    int64_t yoc = (doc - doc / 1460) / 365;
    yy = yoc + cyc * 4;
    doy = doc - 365 * yoc;
  }
  mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yy + (*m <= 2);
}

static const int cum_noleap[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

static int month_length(int cal, int64_t y, int m) {
  static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap;
  if (cal == CATERVA_CAL_360) return 30;
  if (m != 2) return len[m - 1];
  if (cal == CATERVA_CAL_NOLEAP) return 28;
  if (cal == CATERVA_CAL_ALLLEAP) return 29;
  leap = y % 4 == 0;
  if (cal == CATERVA_CAL_PROLEPTIC || (cal == CATERVA_CAL_STANDARD && y > 1582))
    leap = leap && (y % 100 != 0 || y % 400 == 0);
  return leap ? 29 : 28;
}

/* Day number of a date of calendar cal (day 0: 1970-01-01 of that calendar); 0 when the date
 * does not exist there. */
static int cal_days(int cal, int64_t y, int m, int d, int64_t *days) {
  if (m < 1 || m > 12 || d < 1 || d > month_length(cal, y, m)) return 0;
  switch (cal) {
    case CATERVA_CAL_PROLEPTIC: *days = gregorian_days(y, m, d); return 1;
    case CATERVA_CAL_STANDARD:
      if (y > 1582 || (y == 1582 && (m > 10 || (m == 10 && d >= 15)))) {
        *days = gregorian_days(y, m, d);
        return 1;
      }
      if (y == 1582 && m == 10 && d > 4) return 0;
      *days = julian_days(y, m, d);
      return 1;
    case CATERVA_CAL_NOLEAP: *days = (y - 1970) * 365 + cum_noleap[m - 1] + d - 1; return 1;
    case CATERVA_CAL_ALLLEAP:
      *days = (y - 1970) * 366 + cum_noleap[m - 1] + (m > 2) + d - 1;
      return 1;
    default: *days = (y - 1970) * 360 + (m - 1) * 30 + d - 1; return 1;
  }
}

/* The date of day number days of calendar cal. */
static void cal_date(int cal, int64_t days, int64_t *y, int *m, int *d) {
  int64_t n = cal == CATERVA_CAL_360 ? 360 : cal == CATERVA_CAL_ALLLEAP ? 366 : 365, doy;
  if (cal == CATERVA_CAL_PROLEPTIC ||
      (cal == CATERVA_CAL_STANDARD && days >= gregorian_days(1582, 10, 15))) {
    date_from_raw(days + gregorian_raw(1970, 1, 1), 1, y, m, d);
    return;
  }
  if (cal == CATERVA_CAL_STANDARD) {
    date_from_raw(days - julian_days(0, 3, 1), 0, y, m, d);
    return;
  }
  *y = 1970 + floor_div(days, n);
  doy = days - floor_div(days, n) * n;
  if (cal == CATERVA_CAL_360) {
    *m = (int)(doy / 30) + 1;
    *d = (int)(doy % 30) + 1;
    return;
  }
  for (*m = 12; *m > 1; (*m)--) {
    int64_t first = cum_noleap[*m - 1] + (cal == CATERVA_CAL_ALLLEAP && *m > 2);
    if (doy >= first) break;
  }
  *d = (int)(doy - cum_noleap[*m - 1] - (cal == CATERVA_CAL_ALLLEAP && *m > 2)) + 1;
}

static int calendar_parse(const char *z, int *cal) {
  static const struct {
    const char *name;
    int cal;
  } a[] = {{"", CATERVA_CAL_STANDARD},           {"standard", CATERVA_CAL_STANDARD},
           {"gregorian", CATERVA_CAL_STANDARD},  {"proleptic_gregorian", CATERVA_CAL_PROLEPTIC},
           {"noleap", CATERVA_CAL_NOLEAP},       {"365_day", CATERVA_CAL_NOLEAP},
           {"all_leap", CATERVA_CAL_ALLLEAP},    {"366_day", CATERVA_CAL_ALLLEAP},
           {"360_day", CATERVA_CAL_360}};
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
    if (strcmp(z ? z : "", a[i].name) == 0) {
      *cal = a[i].cal;
      return 1;
    }
  }
  return 0;
}

/* ---- ISO 8601 text ------------------------------------------------------------------ */

/* Read 1..nmax digits (exactly n when fixed) into *v. */
static int read_digits(const char **pz, int nmin, int nmax, int64_t *v) {
  const char *z = *pz;
  int n = 0;
  *v = 0;
  while (n < nmax && z[n] >= '0' && z[n] <= '9') *v = *v * 10 + (z[n++] - '0');
  if (n < nmin) return 0;
  *pz = z + n;
  return 1;
}

/* A date and time "Y-M-D[(T| )h:m[:s[.f]]]" with the field widths given (strict: the ISO form
 * SQLite writes; loose: CF units also allow "1990-1-1 0:0:0"). Sets the instant's key. */
static int parse_instant(const char **pz, int cal, int strict, double *key) {
  const char *z = *pz;
  int64_t y, mo, d, h = 0, mi = 0, s = 0, ms = 0, days;
  if (!read_digits(&z, strict ? 4 : 1, 4, &y) || *z++ != '-') return 0;
  if (!read_digits(&z, strict ? 2 : 1, 2, &mo) || *z++ != '-') return 0;
  if (!read_digits(&z, strict ? 2 : 1, 2, &d)) return 0;
  if ((*z == 'T' || *z == ' ') && z[1] >= '0' && z[1] <= '9') {
    z++;
    if (!read_digits(&z, strict ? 2 : 1, 2, &h) || *z++ != ':') return 0;
    if (!read_digits(&z, strict ? 2 : 1, 2, &mi)) return 0;
    if (*z == ':') {
      z++;
      if (!read_digits(&z, strict ? 2 : 1, 2, &s)) return 0;
      if (*z == '.') {
        int64_t f;
        const char *z0 = ++z;
        if (!read_digits(&z, 1, 9, &f)) return 0;
        for (long n = z - z0; n < 3; n++) f *= 10;
        for (long n = z - z0; n > 3; n--) f /= 10;
        ms = f;
      }
    }
  }
  if (y < 1 || h > 23 || mi > 59 || s > 59 || !cal_days(cal, y, (int)mo, (int)d, &days)) return 0;
  *key = (double)days * MS_PER_DAY + (double)((h * 60 + mi) * 60 + s) * 1000.0 + (double)ms;
  *pz = z;
  return 1;
}

/* Skip a zero UTC offset: "Z", "UTC", "+00:00", "+0", "-00". */
static int skip_utc(const char **pz) {
  const char *z = *pz;
  int64_t v;
  while (*z == ' ') z++;
  if (*z == 0) return *pz = z, 1;
  if (*z == 'Z' && z[1] == 0) return *pz = z + 1, 1;
  if (strncmp(z, "UTC", 3) == 0 && z[3] == 0) return *pz = z + 3, 1;
  if (*z != '+' && *z != '-') return 0;
  z++;
  if (!read_digits(&z, 1, 2, &v) || v != 0) return 0;
  if (*z == ':') {
    z++;
    if (!read_digits(&z, 2, 2, &v) || v != 0) return 0;
  }
  if (*z) return 0;
  *pz = z;
  return 1;
}

/* ---- CF time units ------------------------------------------------------------------ */

/* Milliseconds per unit word, or 0. */
static double unit_ms(const char *z, size_t n) {
  static const struct {
    const char *name;
    double ms;
  } a[] = {{"days", MS_PER_DAY},  {"day", MS_PER_DAY},   {"d", MS_PER_DAY},
           {"hours", 3600000.0},  {"hour", 3600000.0},   {"hrs", 3600000.0},
           {"hr", 3600000.0},     {"h", 3600000.0},      {"minutes", 60000.0},
           {"minute", 60000.0},   {"mins", 60000.0},     {"min", 60000.0},
           {"seconds", 1000.0},   {"second", 1000.0},    {"secs", 1000.0},
           {"sec", 1000.0},       {"s", 1000.0},         {"milliseconds", 1.0},
           {"millisecond", 1.0},  {"msecs", 1.0},        {"msec", 1.0},
           {"ms", 1.0},           {"microseconds", 1e-3}, {"microsecond", 1e-3},
           {"us", 1e-3},          {"weeks", 7 * MS_PER_DAY}, {"week", 7 * MS_PER_DAY}};
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
    if (strlen(a[i].name) == n && strncmp(z, a[i].name, n) == 0) return a[i].ms;
  return 0.0;
}

/* Units "<unit> since <date>": 1 with *ums and *origin set; 0 when units has no " since "
 * (a plain number); -1 when it has one but is malformed. */
static int parse_time_units(const char *units, int cal, double *ums, double *origin) {
  const char *z = units, *zSince;
  size_t n;
  if (units == NULL || (zSince = strstr(units, " since ")) == NULL) return 0;
  /* not past zSince: with units " since ..." that made n wrap (UBSan, tests/fuzz/fuzz_array) */
  while (z < zSince && *z == ' ') z++;
  n = (size_t)(zSince - z);
  while (n > 0 && z[n - 1] == ' ') n--;
  *ums = unit_ms(z, n);
  if (*ums == 0.0) return -1;
  z = zSince + 7;
  while (*z == ' ') z++;
  if (!parse_instant(&z, cal, 0, origin) || !skip_utc(&z)) return -1;
  return 1;
}

/* ---- prepared coordinates ------------------------------------------------------------ */

static int resolution_of(const caterva_labels *l) {
  int res = 0;
  int64_t n = l->c.kind == CATERVA_COORD_EXPLICIT ? l->c.nvalues : 2;
  for (int64_t i = 0; i < n && res < 2; i++) {
    double k = caterva_labels_key(l, i);
    if (fmod(k, 1000.0) != 0.0) res = 2;
    else if (fmod(k, MS_PER_DAY) != 0.0 && res < 1) res = 1;
  }
  return res;
}

int caterva_labels_init(caterva_ctx *ctx, caterva_labels *l, const caterva_coord *c, int64_t n) {
  int rc = CATERVA_OK, t;
  memset(l, 0, sizeof *l);
  CAT_CHECK(leave, c != NULL && n >= 0, CATERVA_E_INVALID, "labels: NULL coordinate");
  l->c = *c;
  l->n = n;
  CAT_CHECK(leave, c->kind == CATERVA_COORD_REGULAR || c->kind == CATERVA_COORD_EXPLICIT,
            CATERVA_E_INVALID, "labels: the dimension has no coordinate");
  CAT_CHECK(leave, c->kind == CATERVA_COORD_REGULAR || n <= c->nvalues, CATERVA_E_INVALID,
            "labels: %lld labels for %lld indices", (long long)c->nvalues, (long long)n);
  CAT_CHECK(leave, calendar_parse(c->calendar, &l->calendar), CATERVA_E_INVALID,
            "unknown calendar \"%s\" (known: standard, gregorian, proleptic_gregorian, noleap, "
            "365_day, all_leap, 366_day, 360_day)", c->calendar);
  t = parse_time_units(c->units, l->calendar, &l->unit_ms, &l->origin_ms);
  CAT_CHECK(leave, t >= 0, CATERVA_E_INVALID,
            "units \"%s\": expected \"<unit> since <date>\" with a unit of milliseconds, "
            "seconds, minutes, hours, days or weeks and a date of the %s calendar",
            c->units, c->calendar && c->calendar[0] ? c->calendar : "standard");
  l->is_time = t;
  if (c->kind == CATERVA_COORD_REGULAR) l->dir = c->step > 0 ? 1 : -1;
  else l->dir = c->nvalues > 1 && c->values[1] < c->values[0] ? -1 : 1;
  if (l->is_time) l->resolution = resolution_of(l);
leave:
  return rc;
}

double caterva_labels_value(const caterva_labels *l, int64_t i) {
  if (l->c.kind == CATERVA_COORD_REGULAR) return l->c.start + l->c.step * (double)i;
  return l->c.values[i];
}

double caterva_labels_key(const caterva_labels *l, int64_t i) {
  double v = caterva_labels_value(l, i);
  return l->is_time ? nearbyint(l->origin_ms + v * l->unit_ms) : v;
}

double caterva_labels_from_key(const caterva_labels *l, double k) {
  return l->is_time ? (k - l->origin_ms) / l->unit_ms : k;
}

/* The first index of [0, n) at which pred(key(i)) holds, pred being monotonic in i (false
 * then true); n when it never holds. */
static int64_t first_true(const caterva_labels *l, double k, int op) {
  int64_t lo = 0, hi = l->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    double x = caterva_labels_key(l, mid);
    int t;
    /* In index order the predicate "x op k" flips once: for increasing labels x >= k and
     * x > k become true; for decreasing ones x <= k and x < k do. */
    switch (op) {
      case CATERVA_CMP_GE: t = x >= k; break;
      case CATERVA_CMP_GT: t = x > k; break;
      case CATERVA_CMP_LE: t = x <= k; break;
      default: t = x < k; break;
    }
    if (t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

void caterva_labels_range(const caterva_labels *l, int op, double k, int64_t *lo, int64_t *hi) {
  int up = l->dir > 0;
  *lo = 0;
  *hi = l->n - 1;
  if (isnan(k)) {
    *lo = 1;
    *hi = 0;
    return;
  }
  switch (op) {
    case CATERVA_CMP_EQ:
      *lo = first_true(l, k, up ? CATERVA_CMP_GE : CATERVA_CMP_LE);
      *hi = first_true(l, k, up ? CATERVA_CMP_GT : CATERVA_CMP_LT) - 1;
      break;
    case CATERVA_CMP_GE:
    case CATERVA_CMP_GT:
      if (up) *lo = first_true(l, k, op);
      else *hi = first_true(l, k, op == CATERVA_CMP_GE ? CATERVA_CMP_LT : CATERVA_CMP_LE) - 1;
      break;
    default: /* LT, LE */
      if (up) *hi = first_true(l, k, op == CATERVA_CMP_LE ? CATERVA_CMP_GT : CATERVA_CMP_GE) - 1;
      else *lo = first_true(l, k, op);
      break;
  }
}

int caterva_labels_find(const caterva_labels *l, double k, int64_t *idx) {
  if (isnan(k)) return 0;
  if (l->c.kind == CATERVA_COORD_REGULAR) {
    double g = nearbyint((caterva_labels_from_key(l, k) - l->c.start) / l->c.step);
    if (!(g >= 0.0 && g < 9.0e15)) return 0;
    /* The arithmetic guess may be one off where rounding lands between grid points. */
    for (int64_t i = (int64_t)g - 1; i <= (int64_t)g + 1; i++) {
      if (i >= 0 && caterva_labels_key(l, i) == k) {
        *idx = i;
        return 1;
      }
    }
    return 0;
  } else {
    caterva_labels all = *l;
    int64_t lo, hi;
    all.n = l->c.nvalues;
    caterva_labels_range(&all, CATERVA_CMP_EQ, k, &lo, &hi);
    if (lo > hi) return 0;
    *idx = lo;
    return 1;
  }
}

int64_t caterva_labels_nearest(const caterva_labels *l, double k) {
  int64_t i;
  if (l->n == 0 || isnan(k)) return -1;
  /* The first index at or past k in index order, then the better of it and the one before. */
  i = first_true(l, k, l->dir > 0 ? CATERVA_CMP_GE : CATERVA_CMP_LE);
  if (i >= l->n) return l->n - 1;
  if (i == 0) return 0;
  return fabs(caterva_labels_key(l, i - 1) - k) <= fabs(caterva_labels_key(l, i) - k) ? i - 1 : i;
}

int caterva_labels_format(const caterva_labels *l, int64_t i, char *buf, size_t cap) {
  double k = caterva_labels_key(l, i);
  double days = floor(k / MS_PER_DAY);
  int64_t msday, y;
  int m, d, n;
  if (!(days > -800000.0 && days < 3000000.0)) return CATERVA_E_RANGE;
  msday = (int64_t)(k - days * MS_PER_DAY);
  cal_date(l->calendar, (int64_t)days, &y, &m, &d);
  if (y < 1 || y > 9999) return CATERVA_E_RANGE;
  if (l->resolution == 0)
    n = snprintf(buf, cap, "%04d-%02d-%02d", (int)y, m, d);
  else if (l->resolution == 1)
    n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d", (int)y, m, d, (int)(msday / 3600000),
                 (int)(msday / 60000 % 60), (int)(msday / 1000 % 60));
  else
    n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03d", (int)y, m, d,
                 (int)(msday / 3600000), (int)(msday / 60000 % 60), (int)(msday / 1000 % 60),
                 (int)(msday % 1000));
  return n > 0 && (size_t)n < cap ? CATERVA_OK : CATERVA_E_NOSPACE;
}

int caterva_labels_parse_time(caterva_ctx *ctx, const caterva_labels *l, const char *text,
                              double *key) {
  int rc = CATERVA_OK;
  const char *z = text;
  CAT_CHECK(leave, text != NULL && parse_instant(&z, l->calendar, 1, key) &&
                       (*z == 0 || (*z == 'Z' && z[1] == 0)),
            CATERVA_E_INVALID,
            "'%s' is not a date of the %s calendar (YYYY-MM-DD, optionally with THH:MM[:SS])",
            text ? text : "(null)",
            l->c.calendar && l->c.calendar[0] ? l->c.calendar : "standard");
leave:
  return rc;
}

/* ---- calendar fields and periods ------------------------------------------------------ */

/* The date of index i's instant, and its day number; 0 when it lies outside years 1..9999. */
static int index_date(const caterva_labels *l, int64_t i, int64_t *days, int64_t *y, int *m,
                      int *d) {
  double k = caterva_labels_key(l, i), dd = floor(k / MS_PER_DAY);
  if (!(dd > -800000.0 && dd < 3000000.0)) return 0;
  *days = (int64_t)dd;
  cal_date(l->calendar, *days, y, m, d);
  return *y >= 1 && *y <= 9999;
}

int caterva_labels_field(const caterva_labels *l, int field, int64_t every, int64_t i,
                         int64_t *key) {
  int64_t days, y, first = 0;
  int m, d;
  if (!l->is_time || every < 1 || !index_date(l, i, &days, &y, &m, &d)) return CATERVA_E_RANGE;
  switch (field) {
    case CATERVA_FIELD_YEAR: *key = y; break;
    case CATERVA_FIELD_MONTH: *key = m; break;
    case CATERVA_FIELD_SEASON: *key = m % 12 / 3; break; /* DJF 0, MAM 1, JJA 2, SON 3 */
    case CATERVA_FIELD_DAYOFYEAR:
      (void)cal_days(l->calendar, y, 1, 1, &first);
      *key = days - first + 1;
      break;
    case CATERVA_FIELD_DAYS: *key = floor_div(days, every); break;
    case CATERVA_FIELD_MONTHS: *key = floor_div(y * 12 + m - 1, every); break;
    case CATERVA_FIELD_YEARS: *key = floor_div(y, every); break;
    default: return CATERVA_E_INVALID;
  }
  return CATERVA_OK;
}

int caterva_labels_period_format(const caterva_labels *l, int field, int64_t every,
                                 int64_t key, char *buf, size_t cap) {
  int64_t y = 1, days;
  int m = 1, d = 1, n;
  if (every < 1) return CATERVA_E_RANGE;
  switch (field) {
    case CATERVA_FIELD_DAYS:
      if (key < -800000 / every || key > 3000000 / every) return CATERVA_E_RANGE;
      days = key * every;
      cal_date(l->calendar, days, &y, &m, &d);
      break;
    case CATERVA_FIELD_MONTHS:
      if (key < 0 || key > 120000 / every) return CATERVA_E_RANGE;
      y = key * every / 12;
      m = (int)(key * every % 12) + 1;
      break;
    case CATERVA_FIELD_YEARS:
      if (key < 0 || key > 10000 / every) return CATERVA_E_RANGE;
      y = key * every;
      break;
    default: return CATERVA_E_INVALID;
  }
  if (y < 1 || y > 9999) return CATERVA_E_RANGE;
  n = snprintf(buf, cap, "%04d-%02d-%02d", (int)y, m, d);
  return n > 0 && (size_t)n < cap ? CATERVA_OK : CATERVA_E_NOSPACE;
}
