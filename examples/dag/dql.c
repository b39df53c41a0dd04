/*
 * dql.c: the DQL lexer, recursive-descent parser and selection; see dql.h.
 */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#include "dql.h"

#include <CL/cl.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The attributes a query may name: those of clGetDeviceInfo whose values
 * are numbers, booleans, the device type or strings. */
static const struct dql_attr attrs[] = {
    {"TYPE", CL_DEVICE_TYPE, DQL_TYPE},
    {"VENDOR_ID", CL_DEVICE_VENDOR_ID, DQL_UINT},
    {"MAX_COMPUTE_UNITS", CL_DEVICE_MAX_COMPUTE_UNITS, DQL_UINT},
    {"MAX_WORK_ITEM_DIMENSIONS", CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, DQL_UINT},
    {"MAX_WORK_GROUP_SIZE", CL_DEVICE_MAX_WORK_GROUP_SIZE, DQL_SIZE},
    {"MAX_CLOCK_FREQUENCY", CL_DEVICE_MAX_CLOCK_FREQUENCY, DQL_UINT},
    {"ADDRESS_BITS", CL_DEVICE_ADDRESS_BITS, DQL_UINT},
    {"MAX_MEM_ALLOC_SIZE", CL_DEVICE_MAX_MEM_ALLOC_SIZE, DQL_ULONG},
    {"GLOBAL_MEM_SIZE", CL_DEVICE_GLOBAL_MEM_SIZE, DQL_ULONG},
    {"GLOBAL_MEM_CACHE_SIZE", CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, DQL_ULONG},
    {"LOCAL_MEM_SIZE", CL_DEVICE_LOCAL_MEM_SIZE, DQL_ULONG},
    {"MAX_CONSTANT_BUFFER_SIZE", CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, DQL_ULONG},
    {"MAX_PARAMETER_SIZE", CL_DEVICE_MAX_PARAMETER_SIZE, DQL_SIZE},
    {"PREFERRED_VECTOR_WIDTH_FLOAT", CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, DQL_UINT},
    {"IMAGE_SUPPORT", CL_DEVICE_IMAGE_SUPPORT, DQL_BOOL},
    {"ERROR_CORRECTION_SUPPORT", CL_DEVICE_ERROR_CORRECTION_SUPPORT, DQL_BOOL},
    {"HOST_UNIFIED_MEMORY", CL_DEVICE_HOST_UNIFIED_MEMORY, DQL_BOOL},
    {"ENDIAN_LITTLE", CL_DEVICE_ENDIAN_LITTLE, DQL_BOOL},
    {"AVAILABLE", CL_DEVICE_AVAILABLE, DQL_BOOL},
    {"COMPILER_AVAILABLE", CL_DEVICE_COMPILER_AVAILABLE, DQL_BOOL},
    {"NAME", CL_DEVICE_NAME, DQL_STRING},
    {"VENDOR", CL_DEVICE_VENDOR, DQL_STRING},
    {"VERSION", CL_DEVICE_VERSION, DQL_STRING},
    {"DRIVER_VERSION", CL_DRIVER_VERSION, DQL_STRING},
    {"PROFILE", CL_DEVICE_PROFILE, DQL_STRING},
    {"OPENCL_C_VERSION", CL_DEVICE_OPENCL_C_VERSION, DQL_STRING},
};

const struct dql_attr *dql_find_attr(const char *name)
{
    if (strncasecmp(name, "CL_DEVICE_", 10) == 0)
        name += 10;
    else if (strcasecmp(name, "CL_DRIVER_VERSION") == 0)
        name += 3;
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        if (strcasecmp(attrs[i].name, name) == 0)
            return &attrs[i];
    }
    return NULL;
}

/* ---- lexer ---- */

enum token_kind { TOK_END, TOK_WORD, TOK_NUMBER, TOK_STRING, TOK_COMMA, TOK_OP, TOK_BAD };

struct token {
    enum token_kind kind;
    size_t position, length; /* in the query text */
    uint64_t number;         /* TOK_NUMBER */
    enum dql_op op;          /* TOK_OP */
};

struct parser {
    const char *text;
    struct token tok; /* the current token */
    struct dql_error *error;
    bool failed;
};

/* Sets the error (the first one wins) at the current token. */
static void fail(struct parser *p, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *p, const char *format, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    p->error->position = p->tok.position;
    va_list args;
    va_start(args, format);
    vsnprintf(p->error->message, sizeof(p->error->message), format, args);
    va_end(args);
}

/* How the current token reads in a message: "'WHERE'" or "the end". */
static const char *token_text(const struct parser *p, char *buf, size_t size)
{
    if (p->tok.kind == TOK_END)
        return "the end of the query";
    int len = p->tok.length > 40 ? 40 : (int)p->tok.length;
    snprintf(buf, size, "'%.*s'", len, p->text + p->tok.position);
    return buf;
}

static void expected(struct parser *p, const char *what)
{
    char buf[48];
    fail(p, "expected %s, found %s", what, token_text(p, buf, sizeof(buf)));
}

static void next(struct parser *p)
{
    const char *s = p->text;
    size_t i = p->tok.position + p->tok.length;
    while (isspace((unsigned char)s[i]))
        i++;
    struct token t = {.position = i, .length = 1};
    char c = s[i];
    if (c == '\0') {
        t.kind = TOK_END;
        t.length = 0;
    } else if (isalpha((unsigned char)c) || c == '_') {
        t.kind = TOK_WORD;
        while (isalnum((unsigned char)s[i + t.length]) || s[i + t.length] == '_')
            t.length++;
    } else if (isdigit((unsigned char)c)) {
        t.kind = TOK_NUMBER;
        while (isdigit((unsigned char)s[i + t.length]))
            t.length++;
        errno = 0;
        t.number = strtoull(s + i, NULL, 10);
        if (errno == ERANGE)
            t.kind = TOK_BAD;
    } else if (c == '\'') {
        t.kind = TOK_STRING;
        while (s[i + t.length] && s[i + t.length] != '\'')
            t.length++;
        if (s[i + t.length] == '\'')
            t.length++;
        else
            t.kind = TOK_BAD; /* no closing quote */
    } else if (c == ',') {
        t.kind = TOK_COMMA;
    } else if (strchr("=!<>", c)) {
        t.kind = TOK_OP;
        char d = s[i + 1];
        if (c == '=') {
            t.op = DQL_EQ;
        } else if (c == '!' && d == '=') {
            t.op = DQL_NE, t.length = 2;
        } else if (c == '<' && d == '>') {
            t.op = DQL_NE, t.length = 2;
        } else if (c == '<') {
            t.op = d == '=' ? DQL_LE : DQL_LT, t.length = d == '=' ? 2 : 1;
        } else if (c == '>') {
            t.op = d == '=' ? DQL_GE : DQL_GT, t.length = d == '=' ? 2 : 1;
        } else {
            t.kind = TOK_BAD; /* a lone '!' */
        }
    } else {
        t.kind = TOK_BAD;
    }
    p->tok = t;
}

static bool is_word(const struct parser *p, const char *word)
{
    return p->tok.kind == TOK_WORD && p->tok.length == strlen(word) &&
           strncasecmp(p->text + p->tok.position, word, p->tok.length) == 0;
}

/* Consumes the keyword `word` or fails with "expected WORD". */
static bool keyword(struct parser *p, const char *word, const char *what)
{
    if (p->failed)
        return false;
    if (!is_word(p, word)) {
        expected(p, what);
        return false;
    }
    next(p);
    return true;
}

static bool number(struct parser *p, const char *what, uint64_t *out)
{
    if (p->failed)
        return false;
    if (p->tok.kind == TOK_BAD && isdigit((unsigned char)p->text[p->tok.position])) {
        fail(p, "%s is too large", what);
        return false;
    }
    if (p->tok.kind != TOK_NUMBER) {
        expected(p, what);
        return false;
    }
    *out = p->tok.number;
    next(p);
    return true;
}

/* ---- grammar ---- */

static const struct dql_attr *attribute(struct parser *p)
{
    if (p->failed)
        return NULL;
    if (p->tok.kind != TOK_WORD) {
        expected(p, "a device attribute");
        return NULL;
    }
    char name[64];
    size_t len = p->tok.length < sizeof(name) ? p->tok.length : sizeof(name) - 1;
    memcpy(name, p->text + p->tok.position, len);
    name[len] = '\0';
    const struct dql_attr *attr = dql_find_attr(name);
    if (!attr) {
        fail(p, "unknown device attribute '%s'", name);
        return NULL;
    }
    next(p);
    return attr;
}

static const struct {
    const char *word;
    uint64_t type;
} type_names[] = {
    {"GPU", CL_DEVICE_TYPE_GPU},       {"CPU", CL_DEVICE_TYPE_CPU},
    {"ACCELERATOR", CL_DEVICE_TYPE_ACCELERATOR}, {"CUSTOM", CL_DEVICE_TYPE_CUSTOM},
    {"DEFAULT", CL_DEVICE_TYPE_DEFAULT},
};

static void value(struct parser *p, struct dql_cond *cond)
{
    if (p->failed)
        return;
    const struct dql_attr *attr = cond->attr;
    char buf[48];
    switch (attr->kind) {
    case DQL_TYPE:
        for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
            if (is_word(p, type_names[i].word)) {
                cond->value.number = type_names[i].type;
                next(p);
                return;
            }
        }
        expected(p, "GPU, CPU, ACCELERATOR, CUSTOM or DEFAULT");
        return;
    case DQL_BOOL:
        if (is_word(p, "TRUE") || is_word(p, "FALSE")) {
            cond->value.number = is_word(p, "TRUE");
            next(p);
            return;
        }
        expected(p, "TRUE or FALSE");
        return;
    case DQL_STRING:
        if (p->tok.kind == TOK_BAD && p->text[p->tok.position] == '\'') {
            fail(p, "string starting at %zu has no closing quote", p->tok.position);
            return;
        }
        if (p->tok.kind != TOK_STRING) {
            expected(p, "a quoted string");
            return;
        }
        cond->value.string = strndup(p->text + p->tok.position + 1, p->tok.length - 2);
        next(p);
        return;
    case DQL_UINT:
    case DQL_ULONG:
    case DQL_SIZE: {
        uint64_t n;
        if (!number(p, "a number", &n))
            return;
        uint64_t scale = 1;
        if (is_word(p, "KB"))
            scale = UINT64_C(1) << 10;
        else if (is_word(p, "MB"))
            scale = UINT64_C(1) << 20;
        else if (is_word(p, "GB"))
            scale = UINT64_C(1) << 30;
        if (scale > 1) {
            if (n > UINT64_MAX / scale) {
                fail(p, "%s is too large", token_text(p, buf, sizeof(buf)));
                return;
            }
            n *= scale;
            next(p);
        }
        cond->value.number = n;
        return;
    }
    }
}

static void condition(struct parser *p, struct dql_query *q)
{
    if (p->failed)
        return;
    if (q->num_conds == DQL_MAX_CONDS) {
        fail(p, "more than %d conditions", DQL_MAX_CONDS);
        return;
    }
    struct dql_cond *cond = &q->conds[q->num_conds];
    cond->attr = attribute(p);
    if (p->failed)
        return;
    if (p->tok.kind != TOK_OP) {
        expected(p, "a comparison (=, !=, <>, <, <=, >, >=)");
        return;
    }
    cond->op = p->tok.op;
    enum dql_kind kind = cond->attr->kind;
    if ((kind == DQL_TYPE || kind == DQL_BOOL || kind == DQL_STRING) && cond->op != DQL_EQ &&
        cond->op != DQL_NE) {
        fail(p, "%s can only be compared with = or !=", cond->attr->name);
        return;
    }
    next(p);
    value(p, cond);
    if (!p->failed)
        q->num_conds++;
}

int dql_parse(const char *text, struct dql_query *q, struct dql_error *error)
{
    memset(q, 0, sizeof(*q));
    memset(error, 0, sizeof(*error));
    struct parser p = {.text = text, .error = error};
    next(&p);

    keyword(&p, "SELECT", "SELECT");
    if (!p.failed) {
        if (is_word(&p, "ALL")) {
            q->select = DQL_ALL;
            next(&p);
        } else if (is_word(&p, "TOP")) {
            q->select = DQL_TOP;
            next(&p);
            number(&p, "the number of devices after TOP", &q->count);
            if (!p.failed && q->count == 0)
                fail(&p, "TOP needs at least 1 device");
        } else if (is_word(&p, "POS")) {
            q->select = DQL_POS;
            next(&p);
            number(&p, "a position after POS", &q->count);
        } else {
            expected(&p, "ALL, TOP or POS");
        }
    }
    if (!p.failed && is_word(&p, "FROM")) {
        next(&p);
        keyword(&p, "NODE", "NODE after FROM");
        do {
            if (!p.failed && q->num_nodes == DQL_MAX_NODES)
                fail(&p, "more than %d nodes", DQL_MAX_NODES);
            if (number(&p, "a node number", &q->nodes[q->num_nodes]))
                q->num_nodes++;
        } while (!p.failed && p.tok.kind == TOK_COMMA && (next(&p), true));
    }
    if (!p.failed && is_word(&p, "WHERE")) {
        next(&p);
        condition(&p, q);
        while (!p.failed && is_word(&p, "AND")) {
            next(&p);
            condition(&p, q);
        }
    }
    if (!p.failed && is_word(&p, "ORDER")) {
        next(&p);
        keyword(&p, "BY", "BY after ORDER");
        q->order_by = attribute(&p);
        if (!p.failed && (is_word(&p, "ASC") || is_word(&p, "DESC"))) {
            q->descending = is_word(&p, "DESC");
            next(&p);
        }
    }
    if (!p.failed && p.tok.kind != TOK_END) {
        /* Say what could have come here, given how far the query got. */
        if (q->order_by)
            expected(&p, "ASC, DESC or the end of the query");
        else if (q->num_conds)
            expected(&p, "AND, ORDER BY or the end of the query");
        else if (q->num_nodes)
            expected(&p, "',', WHERE, ORDER BY or the end of the query");
        else
            expected(&p, "FROM NODE, WHERE, ORDER BY or the end of the query");
    }
    if (p.failed) {
        dql_free(q);
        return -1;
    }
    return 0;
}

void dql_free(struct dql_query *q)
{
    for (unsigned i = 0; i < DQL_MAX_CONDS; i++) {
        free(q->conds[i].value.string);
        q->conds[i].value.string = NULL;
    }
}

/* ---- selection ---- */

static bool compare(enum dql_op op, int order)
{
    switch (op) {
    case DQL_EQ:
        return order == 0;
    case DQL_NE:
        return order != 0;
    case DQL_LT:
        return order < 0;
    case DQL_LE:
        return order <= 0;
    case DQL_GT:
        return order > 0;
    case DQL_GE:
        return order >= 0;
    }
    return false;
}

static int holds(const struct dql_cond *cond, const struct dql_value *v)
{
    switch (cond->attr->kind) {
    case DQL_TYPE: /* a bit of the device's type */
        return compare(cond->op, (v->number & cond->value.number) ? 0 : 1);
    case DQL_STRING:
        return compare(cond->op, strcmp(v->string, cond->value.string));
    default:
        return compare(cond->op, v->number < cond->value.number   ? -1
                                 : v->number > cond->value.number ? 1
                                                                  : 0);
    }
}

/* Key of ORDER BY: a number, or the string copied. */
struct keyed {
    size_t index;
    uint64_t number;
    char *string;
};

static bool order_descending; /* qsort has no context argument */

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = x->string ? strcmp(x->string, y->string)
                      : (x->number < y->number) ? -1 : (x->number > y->number);
    if (order_descending)
        c = -c;
    /* Stable: equal keys keep the platform order. */
    return c ? c : (x->index < y->index ? -1 : 1);
}

int dql_select(const struct dql_query *q, size_t count, const int *node_of, dql_get_fn *get,
               void *ctx, size_t *selected)
{
    struct keyed *keys = calloc(count ? count : 1, sizeof(*keys));
    if (!keys)
        return -1;
    size_t n = 0;
    int result = 0;
    for (size_t i = 0; i < count && result == 0; i++) {
        bool ok = q->num_nodes == 0;
        for (unsigned k = 0; k < q->num_nodes; k++)
            ok |= node_of[i] >= 0 && (uint64_t)node_of[i] == q->nodes[k];
        for (unsigned c = 0; c < q->num_conds && ok; c++) {
            struct dql_value v = {0};
            if (get(ctx, i, q->conds[c].attr, &v) != 0)
                result = -1;
            else
                ok = holds(&q->conds[c], &v);
        }
        if (!ok || result)
            continue;
        keys[n].index = i;
        if (q->order_by) {
            struct dql_value v = {0};
            if (get(ctx, i, q->order_by, &v) != 0) {
                result = -1;
                continue;
            }
            keys[n].number = v.number;
            keys[n].string = v.string ? strdup(v.string) : NULL;
        }
        n++;
    }
    if (result == 0 && q->order_by) {
        order_descending = q->descending;
        qsort(keys, n, sizeof(*keys), by_key);
    }
    size_t first = 0, taken = n;
    if (q->select == DQL_TOP && q->count < n)
        taken = q->count;
    if (q->select == DQL_POS) {
        first = q->count;
        taken = q->count < n ? 1 : 0;
    }
    for (size_t i = 0; i < taken; i++)
        selected[i] = keys[first + i].index;
    for (size_t i = 0; i < n; i++)
        free(keys[i].string);
    free(keys);
    return result ? -1 : (int)taken;
}
