/*
 * file.c: the events file of the HEP runtime, in HDF5 (hep.h).
 *
 * Layout: group /events with attribute "format" = "hep-events 1", dataset
 * event_id (uint64, n) and one dataset per input column (n x width, float32
 * or int32), all chunked along the events and optionally deflated.
 *
 * Reading: the library's own H5Dread runs under its global lock, so several
 * data-setup threads would take turns to inflate.  Where a column is stored
 * in the native type with deflate or no filter, a reader takes the raw
 * chunk with H5Dread_chunk (under the lock, short) and inflates it with zlib
 * outside, so DS threads decode in parallel; anything else goes through
 * H5Dread.
 */
#include "hep.h"

#include <hdf5.h>
#include <zlib.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "hep-events 1"

struct column {
    hid_t dset;
    hid_t mem_type;
    size_t width, esize;
    bool direct, deflated;
    size_t chunk; /* events per chunk */
};

struct hep_file {
    hid_t file, group;
    bool writing;
    char *path, *tmp;
    uint64_t events;
    size_t ncols; /* 1 + input columns; column 0 is event_id */
    struct column *cols;
};

static int fail(char *error, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *error, const char *format, ...)
{
    if (error) {
        va_list ap;
        va_start(ap, format);
        vsnprintf(error, HEP_ERROR_SIZE, format, ap);
        va_end(ap);
    }
    return -1;
}

static hid_t native_type(enum hep_type t)
{
    return t == HEP_F32 ? H5T_NATIVE_FLOAT : t == HEP_I32 ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE;
}

/* Held around every HDF5 call of a read, for builds of the library that
 * are not thread-safe (Debian's is; then it costs nothing more). */
static pthread_mutex_t h5_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
static void quiet(void)
{
    /* Errors are reported by return value and message, not by printing
     * HDF5's error stack. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void release(hep_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->ncols; i++)
        if (f->cols[i].dset > 0)
            H5Dclose(f->cols[i].dset);
    if (f->group > 0)
        H5Gclose(f->group);
    if (f->file > 0)
        H5Fclose(f->file);
    free(f->cols);
    free(f->path);
    free(f->tmp);
    free(f);
}

hep_file *hep_file_create(const char *path, const struct hep_column *columns, size_t num_columns,
                          size_t chunk, int deflate, char *error)
{
    pthread_once(&quiet_once, quiet);
    hep_file *f = calloc(1, sizeof(*f));
    if (!f)
        return fail(error, "out of memory"), NULL;
    f->writing = true;
    f->cols = calloc(num_columns + 1, sizeof(*f->cols));
    f->path = strdup(path);
    f->tmp = malloc(strlen(path) + 5);
    if (!f->cols || !f->path || !f->tmp) {
        release(f);
        return fail(error, "out of memory"), NULL;
    }
    sprintf(f->tmp, "%s.tmp", path);
    f->file = H5Fcreate(f->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f->file < 0) {
        release(f);
        return fail(error, "cannot create %s.tmp", path), NULL;
    }
    f->group = H5Gcreate2(f->file, "events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate(H5S_SCALAR), str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, sizeof(FORMAT));
    hid_t attr = H5Acreate2(f->group, "format", str, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = attr < 0 ? -1 : H5Awrite(attr, str, FORMAT);
    if (attr >= 0)
        H5Aclose(attr);
    H5Tclose(str);
    H5Sclose(space);
    if (f->group < 0 || st < 0)
        goto fail_h5;
    for (size_t i = 0; i <= num_columns; i++) {
        const struct hep_column *c = i ? &columns[i - 1] : NULL;
        if (c && c->derived)
            continue;
        struct column *col = &f->cols[f->ncols++];
        col->width = c ? c->width : 1;
        col->mem_type = c ? native_type(c->type) : H5T_NATIVE_UINT64;
        hsize_t dims[2] = {0, col->width}, max[2] = {H5S_UNLIMITED, col->width};
        hsize_t cdims[2] = {chunk ? chunk : 4096, col->width};
        hid_t sp = H5Screate_simple(c ? 2 : 1, dims, max);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, c ? 2 : 1, cdims);
        if (deflate > 0)
            H5Pset_deflate(dcpl, (unsigned)deflate);
        hid_t ftype = c ? (c->type == HEP_F32 ? H5T_IEEE_F32LE : H5T_STD_I32LE) : H5T_STD_U64LE;
        col->dset = H5Dcreate2(f->group, c ? c->name : "event_id", ftype, sp, H5P_DEFAULT, dcpl,
                               H5P_DEFAULT);
        H5Pclose(dcpl);
        H5Sclose(sp);
        if (col->dset < 0)
            goto fail_h5;
    }
    return f;
fail_h5:
    fail(error, "cannot lay out the events in %s", path);
    char *tmp = f->tmp;
    f->tmp = NULL;
    release(f);
    remove(tmp);
    free(tmp);
    return NULL;
}

int hep_file_append(hep_file *f, size_t count, const uint64_t *ids, void *const *data, char *error)
{
    for (size_t i = 0; i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        hsize_t dims[2] = {f->events + count, c->width};
        hsize_t start[2] = {f->events, 0}, n[2] = {count, c->width};
        int rank = i ? 2 : 1;
        if (H5Dset_extent(c->dset, dims) < 0)
            return fail(error, "cannot grow %s", f->path);
        hid_t fs = H5Dget_space(c->dset), ms = H5Screate_simple(rank, n, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, n, NULL);
        herr_t st = H5Dwrite(c->dset, c->mem_type, ms, fs, H5P_DEFAULT, i ? data[i - 1] : ids);
        H5Sclose(ms);
        H5Sclose(fs);
        if (st < 0)
            return fail(error, "cannot write events to %s", f->path);
    }
    f->events += count;
    return 0;
}

static const char *type_name(enum hep_type t)
{
    return t == HEP_F32 ? "float32" : t == HEP_I32 ? "int32" : "float64";
}

/* Checks dataset `name` and fills *col; returns -1 with a message. */
static int open_column(hep_file *f, const char *name, enum hep_type type, size_t width, bool ids,
                       struct column *col, char *error)
{
    if (H5Lexists(f->group, name, H5P_DEFAULT) <= 0)
        return fail(error, "%s: no dataset /events/%s", f->path, name);
    col->dset = H5Dopen2(f->group, name, H5P_DEFAULT);
    if (col->dset < 0)
        return fail(error, "%s: cannot open /events/%s", f->path, name);
    col->width = width;
    col->mem_type = ids ? H5T_NATIVE_UINT64 : native_type(type);
    hid_t dtype = H5Dget_type(col->dset), space = H5Dget_space(col->dset);
    H5T_class_t cls = H5Tget_class(dtype);
    size_t size = H5Tget_size(dtype);
    col->esize = H5Tget_size(col->mem_type);
    bool native = H5Tequal(dtype, col->mem_type) > 0;
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(space, dims, NULL);
    H5Sclose(space);
    H5Tclose(dtype);
    bool type_ok = ids ? cls == H5T_INTEGER && size == 8
                       : (type == HEP_F32 ? cls == H5T_FLOAT : cls == H5T_INTEGER) && size == 4;
    if (!type_ok)
        return fail(error, "%s: /events/%s is not %s", f->path, name,
                    ids ? "uint64" : type_name(type));
    if (ids ? rank != 1 : rank != 2 || dims[1] != width)
        return fail(error, "%s: /events/%s has the wrong shape (want %zu values per event)",
                    f->path, name, width);
    if (!ids && dims[0] != f->events)
        return fail(error, "%s: /events/%s has %llu events, event_id %llu", f->path, name,
                    (unsigned long long)dims[0], (unsigned long long)f->events);
    if (ids)
        f->events = dims[0];
    /* Can the raw chunks be inflated here? */
    hid_t dcpl = H5Dget_create_plist(col->dset);
    if (native && H5Pget_layout(dcpl) == H5D_CHUNKED) {
        hsize_t cd[2] = {0, 0};
        H5Pget_chunk(dcpl, 2, cd);
        int nf = H5Pget_nfilters(dcpl);
        unsigned flags, cdv[8];
        size_t ncdv = 8;
        H5Z_filter_t filt = nf == 1 ? H5Pget_filter2(dcpl, 0, &flags, &ncdv, cdv, 0, NULL, NULL)
                                    : H5Z_FILTER_NONE;
        if ((nf == 0 || (nf == 1 && filt == H5Z_FILTER_DEFLATE)) && (ids || cd[1] == width)) {
            col->direct = true;
            col->deflated = nf == 1;
            col->chunk = cd[0];
        }
    }
    H5Pclose(dcpl);
    return 0;
}

hep_file *hep_file_open(const char *path, const struct hep_column *columns, size_t num_columns,
                        char *error)
{
    pthread_once(&quiet_once, quiet);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return fail(error, "cannot open %s: %s", path, strerror(errno)), NULL;
    fclose(probe);
#if H5_VERSION_GE(1, 12, 0)
    htri_t is_hdf5 = H5Fis_accessible(path, H5P_DEFAULT);
#else
    htri_t is_hdf5 = H5Fis_hdf5(path);
#endif
    if (is_hdf5 <= 0)
        return fail(error, "%s is not an HDF5 file (or it is damaged)", path), NULL;
    hep_file *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path)) ||
        !(f->cols = calloc(num_columns + 1, sizeof(*f->cols)))) {
        release(f);
        return fail(error, "out of memory"), NULL;
    }
    f->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f->file < 0) {
        release(f);
        return fail(error, "%s: cannot open this HDF5 file (damaged?)", path), NULL;
    }
    if (H5Lexists(f->file, "events", H5P_DEFAULT) <= 0 ||
        (f->group = H5Gopen2(f->file, "events", H5P_DEFAULT)) < 0) {
        fail(error, "%s: no group /events: not an events file", path);
        release(f);
        return NULL;
    }
    int rc = open_column(f, "event_id", HEP_I32, 1, true, &f->cols[f->ncols++], error);
    for (size_t i = 0; rc == 0 && i < num_columns; i++)
        if (!columns[i].derived)
            rc = open_column(f, columns[i].name, columns[i].type, columns[i].width, false,
                             &f->cols[f->ncols++], error);
    if (rc) {
        release(f);
        return NULL;
    }
    return f;
}

uint64_t hep_file_events(const hep_file *f)
{
    return f->events;
}

/* The serialised part of a direct read: the raw bytes of one chunk. */
static int raw_chunk(struct column *c, uint64_t row, unsigned char **buf, size_t *cap,
                     size_t *len, uint32_t *mask)
{
    hsize_t off[2] = {row, 0};
    hsize_t nbytes = 0;
    if (H5Dget_chunk_storage_size(c->dset, off, &nbytes) < 0 || nbytes == 0)
        return -1;
    if (nbytes > *cap) {
        unsigned char *b = realloc(*buf, nbytes);
        if (!b)
            return -1;
        *buf = b, *cap = nbytes;
    }
    *len = nbytes;
    return H5Dread_chunk(c->dset, H5P_DEFAULT, off, mask, *buf) < 0 ? -1 : 0;
}

static int read_direct(hep_file *f, struct column *c, uint64_t first, size_t count, void *dest,
                       char *error)
{
    size_t row_bytes = c->width * c->esize, chunk_bytes = c->chunk * row_bytes;
    unsigned char *raw = NULL, *plain = malloc(chunk_bytes);
    size_t cap = 0;
    int rc = plain ? 0 : fail(error, "out of memory");
    for (uint64_t row = first - first % c->chunk; rc == 0 && row < first + count;
         row += c->chunk) {
        size_t len;
        uint32_t mask = 0;
        pthread_mutex_lock(&h5_lock);
        int got = raw_chunk(c, row, &raw, &cap, &len, &mask);
        pthread_mutex_unlock(&h5_lock);
        if (got) {
            rc = fail(error, "%s: cannot read a chunk at event %llu (damaged?)", f->path,
                      (unsigned long long)row);
            break;
        }
        const unsigned char *src = raw;
        if (c->deflated && !(mask & 1)) {
            uLongf out = chunk_bytes;
            if (uncompress(plain, &out, raw, len) != Z_OK || out != chunk_bytes) {
                rc = fail(error, "%s: a chunk at event %llu does not inflate (damaged)", f->path,
                          (unsigned long long)row);
                break;
            }
            src = plain;
        } else if (len != chunk_bytes) {
            rc = fail(error, "%s: a chunk at event %llu has %zu bytes, not %zu (damaged)",
                      f->path, (unsigned long long)row, len, chunk_bytes);
            break;
        }
        uint64_t lo = row > first ? row : first;
        uint64_t hi = row + c->chunk < first + count ? row + c->chunk : first + count;
        memcpy((unsigned char *)dest + (lo - first) * row_bytes, src + (lo - row) * row_bytes,
               (hi - lo) * row_bytes);
    }
    free(raw);
    free(plain);
    return rc;
}

static int read_slab(hep_file *f, struct column *c, int rank, uint64_t first, size_t count,
                     void *dest, char *error)
{
    hsize_t start[2] = {first, 0}, n[2] = {count, c->width};
    pthread_mutex_lock(&h5_lock);
    hid_t fs = H5Dget_space(c->dset), ms = H5Screate_simple(rank, n, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, n, NULL);
    herr_t st = H5Dread(c->dset, c->mem_type, ms, fs, H5P_DEFAULT, dest);
    H5Sclose(ms);
    H5Sclose(fs);
    pthread_mutex_unlock(&h5_lock);
    return st < 0 ? fail(error, "%s: cannot read events %llu..%llu (damaged?)", f->path,
                         (unsigned long long)first, (unsigned long long)(first + count))
                  : 0;
}

int hep_file_read(hep_file *f, uint64_t first, size_t count, uint64_t *ids, void *const *data,
                  char *error)
{
    if (first + count > f->events || count == 0)
        return fail(error, "%s: events %llu..%llu are out of range", f->path,
                    (unsigned long long)first, (unsigned long long)(first + count));
    for (size_t i = 0; i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        void *dest = i ? data[i - 1] : ids;
        int rc = c->direct ? read_direct(f, c, first, count, dest, error)
                           : read_slab(f, c, i ? 2 : 1, first, count, dest, error);
        if (rc)
            return rc;
    }
    return 0;
}

int hep_file_close(hep_file *f, char *error)
{
    if (!f)
        return 0;
    int rc = 0;
    if (f->writing) {
        bool flushed = H5Fflush(f->file, H5F_SCOPE_GLOBAL) >= 0;
        char *path = f->path, *tmp = f->tmp;
        f->path = f->tmp = NULL;
        release(f);
        if (!flushed || rename(tmp, path) != 0) {
            rc = fail(error, "cannot finish %s", path);
            remove(tmp);
        }
        free(path);
        free(tmp);
        return rc;
    }
    release(f);
    return rc;
}
