/*
 * dql.h: the device query language of the DAG runtime (libWater's DQL):
 *
 *   query  := SELECT (ALL | TOP int | POS int)
 *             [FROM NODE int {, int}]
 *             [WHERE cond {AND cond}]
 *             [ORDER BY attr [ASC | DESC]]
 *   cond   := attr op value        op := = | != | <> | < | <= | > | >=
 *   value  := int [KB | MB | GB] | TRUE | FALSE | GPU | CPU | ACCELERATOR
 *             | CUSTOM | DEFAULT | 'string'
 *   attr   := a clGetDeviceInfo name, with or without CL_DEVICE_
 *
 * Keywords and attribute names are case-insensitive.  TYPE = GPU holds when
 * the device's type has the GPU bit.  Parsing and selection are pure: the
 * attributes of a device come from a callback, so the unit tests need no
 * OpenCL.
 */
#ifndef DAG_DQL_H
#define DAG_DQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dql_select { DQL_ALL, DQL_TOP, DQL_POS };
enum dql_op { DQL_EQ, DQL_NE, DQL_LT, DQL_LE, DQL_GT, DQL_GE };
/* How an attribute's value is read and compared. */
enum dql_kind { DQL_UINT, DQL_ULONG, DQL_SIZE, DQL_BOOL, DQL_TYPE, DQL_STRING };

struct dql_attr {
    const char *name;  /* without CL_DEVICE_ */
    uint32_t param;    /* the cl_device_info */
    enum dql_kind kind;
};

/* A value: `number` for every kind but strings. */
struct dql_value {
    uint64_t number;
    char *string;
};

#define DQL_MAX_CONDS 16
#define DQL_MAX_NODES 64

struct dql_cond {
    const struct dql_attr *attr;
    enum dql_op op;
    struct dql_value value;
};

struct dql_query {
    enum dql_select select;
    uint64_t count; /* k of TOP k, i of POS i */
    unsigned num_nodes;
    uint64_t nodes[DQL_MAX_NODES];
    unsigned num_conds;
    struct dql_cond conds[DQL_MAX_CONDS];
    const struct dql_attr *order_by; /* NULL: keep the platform order */
    bool descending;
};

/* A parse error: `position` is the 0-based offset of the offending token in
 * the query, `message` says what was expected and what was found. */
struct dql_error {
    size_t position;
    char message[160];
};

/* Parses `text` into *query (free it with dql_free()).  Returns 0, or -1
 * with *error filled in. */
int dql_parse(const char *text, struct dql_query *query, struct dql_error *error);
void dql_free(struct dql_query *query);

/* The attribute named `name` (with or without CL_DEVICE_), or NULL. */
const struct dql_attr *dql_find_attr(const char *name);

/* Reads attribute `attr` of device `index` into *value (a string value is
 * the callee's, valid until the next call); returns 0, or -1 if it cannot. */
typedef int dql_get_fn(void *ctx, size_t index, const struct dql_attr *attr,
                       struct dql_value *value);

/* Applies the query to devices 0..count-1, whose nodes are node_of[i]:
 * writes the selected indices, in order, to selected[] (room for count) and
 * returns how many.  Returns -1 if an attribute cannot be read. */
int dql_select(const struct dql_query *query, size_t count, const int *node_of, dql_get_fn *get,
               void *ctx, size_t *selected);

#endif
