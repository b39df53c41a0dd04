/*
 * test_dql.c: unit tests of the DQL parser and of selection (dql.c): every
 * clause of the grammar, every error with its position and what it says was
 * expected, and selection over a table of made-up devices.
 */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#include "dql.h"

#include <CL/cl.h>

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static void test_select_forms(void **state)
{
    (void)state;
    struct dql_query q;
    struct dql_error e;
    assert_int_equal(dql_parse("SELECT ALL", &q, &e), 0);
    assert_int_equal(q.select, DQL_ALL);
    assert_int_equal(dql_parse("select top 3", &q, &e), 0);
    assert_int_equal(q.select, DQL_TOP);
    assert_int_equal(q.count, 3);
    assert_int_equal(dql_parse("  SELECT POS 0  ", &q, &e), 0);
    assert_int_equal(q.select, DQL_POS);
    assert_int_equal(q.count, 0);
    assert_int_equal(q.num_conds, 0);
    assert_null(q.order_by);
}

static void test_full_query(void **state)
{
    (void)state;
    struct dql_query q;
    struct dql_error e;
    const char *text = "SELECT TOP 2 FROM NODE 0, 1,7 WHERE TYPE = GPU AND "
                       "CL_DEVICE_GLOBAL_MEM_SIZE >= 1024MB AND max_compute_units<>4 AND "
                       "NAME != 'pthread' AND AVAILABLE = TRUE ORDER BY MAX_COMPUTE_UNITS DESC";
    assert_int_equal(dql_parse(text, &q, &e), 0);
    assert_int_equal(q.num_nodes, 3);
    assert_int_equal(q.nodes[2], 7);
    assert_int_equal(q.num_conds, 5);
    assert_int_equal(q.conds[0].attr->param, CL_DEVICE_TYPE);
    assert_int_equal(q.conds[0].value.number, CL_DEVICE_TYPE_GPU);
    assert_int_equal(q.conds[1].op, DQL_GE);
    assert_int_equal(q.conds[1].value.number, UINT64_C(1024) << 20);
    assert_int_equal(q.conds[2].op, DQL_NE);
    assert_string_equal(q.conds[3].value.string, "pthread");
    assert_int_equal(q.conds[4].value.number, 1);
    assert_int_equal(q.order_by->param, CL_DEVICE_MAX_COMPUTE_UNITS);
    assert_true(q.descending);
    dql_free(&q);
    assert_int_equal(dql_parse("SELECT ALL ORDER BY NAME ASC", &q, &e), 0);
    assert_false(q.descending);
    assert_int_equal(dql_parse("SELECT ALL WHERE LOCAL_MEM_SIZE < 64KB", &q, &e), 0);
    assert_int_equal(q.conds[0].value.number, 65536);
    assert_int_equal(q.conds[0].op, DQL_LT);
    assert_int_equal(dql_parse("SELECT ALL WHERE MAX_MEM_ALLOC_SIZE <= 2GB", &q, &e), 0);
    assert_int_equal(q.conds[0].value.number, UINT64_C(2) << 30);
}

/* Every error: the query, where it is reported and what the message says. */
static const struct {
    const char *query;
    size_t position;
    const char *message;
} errors[] = {
    {"", 0, "expected SELECT, found the end of the query"},
    {"FIND ALL", 0, "expected SELECT, found 'FIND'"},
    {"SELECT", 6, "expected ALL, TOP or POS, found the end of the query"},
    {"SELECT SOME", 7, "expected ALL, TOP or POS, found 'SOME'"},
    {"SELECT TOP", 10, "expected the number of devices after TOP, found the end"},
    {"SELECT TOP x", 11, "expected the number of devices after TOP, found 'x'"},
    {"SELECT TOP 0", 12, "TOP needs at least 1 device"},
    {"SELECT TOP 99999999999999999999", 11, "the number of devices after TOP is too large"},
    {"SELECT POS -1", 11, "expected a position after POS, found '-'"},
    {"SELECT ALL FROM 1", 16, "expected NODE after FROM, found '1'"},
    {"SELECT ALL FROM NODE", 20, "expected a node number, found the end"},
    {"SELECT ALL FROM NODE 1,", 23, "expected a node number, found the end"},
    {"SELECT ALL FROM NODE 1 2", 23, "expected ',', WHERE, ORDER BY or the end of the query"},
    {"SELECT ALL WHERE", 16, "expected a device attribute, found the end"},
    {"SELECT ALL WHERE 3 = 3", 17, "expected a device attribute, found '3'"},
    {"SELECT ALL WHERE SPEED > 3", 17, "unknown device attribute 'SPEED'"},
    {"SELECT ALL WHERE TYPE GPU", 22, "expected a comparison (=, !=, <>, <, <=, >, >=), found 'GPU'"},
    {"SELECT ALL WHERE TYPE ! GPU", 22, "expected a comparison"},
    {"SELECT ALL WHERE TYPE = FPGA", 24, "expected GPU, CPU, ACCELERATOR, CUSTOM or DEFAULT, found 'FPGA'"},
    {"SELECT ALL WHERE TYPE > GPU", 22, "TYPE can only be compared with = or !="},
    {"SELECT ALL WHERE AVAILABLE = 1", 29, "expected TRUE or FALSE, found '1'"},
    {"SELECT ALL WHERE NAME = pocl", 24, "expected a quoted string, found 'pocl'"},
    {"SELECT ALL WHERE NAME = 'pocl", 24, "string starting at 24 has no closing quote"},
    {"SELECT ALL WHERE NAME < 'a'", 22, "NAME can only be compared with = or !="},
    {"SELECT ALL WHERE MAX_COMPUTE_UNITS > many", 37, "expected a number, found 'many'"},
    {"SELECT ALL WHERE GLOBAL_MEM_SIZE > 99999999999GB", 46, "'GB' is too large"},
    {"SELECT ALL WHERE MAX_COMPUTE_UNITS > 4 OR TYPE = GPU", 39,
     "expected AND, ORDER BY or the end of the query, found 'OR'"},
    {"SELECT ALL WHERE MAX_COMPUTE_UNITS > 4 AND", 42, "expected a device attribute"},
    {"SELECT ALL ORDER NAME", 17, "expected BY after ORDER, found 'NAME'"},
    {"SELECT ALL ORDER BY", 19, "expected a device attribute, found the end"},
    {"SELECT ALL ORDER BY NAME UP", 25, "expected ASC, DESC or the end of the query, found 'UP'"},
    {"SELECT ALL ;", 11, "expected FROM NODE, WHERE, ORDER BY or the end of the query, found ';'"},
    {"SELECT ALL WHERE TYPE = GPU AND TYPE = CPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU "
     "AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU "
     "AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU AND TYPE = GPU",
     257, "more than 16 conditions"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        struct dql_query q;
        struct dql_error e;
        if (dql_parse(errors[i].query, &q, &e) == 0)
            fail_msg("\"%s\" parsed", errors[i].query);
        if (!strstr(e.message, errors[i].message) || e.position != errors[i].position)
            fail_msg("\"%s\": got %zu: %s; wanted %zu: %s", errors[i].query, e.position, e.message,
                     errors[i].position, errors[i].message);
    }
}

static void test_attr_names(void **state)
{
    (void)state;
    assert_non_null(dql_find_attr("max_compute_units"));
    assert_ptr_equal(dql_find_attr("CL_DEVICE_NAME"), dql_find_attr("NAME"));
    assert_ptr_equal(dql_find_attr("CL_DRIVER_VERSION"), dql_find_attr("DRIVER_VERSION"));
    assert_null(dql_find_attr("CL_DEVICE_"));
    assert_null(dql_find_attr("NODE"));
}

/* Made-up devices: type, compute units, global memory (MB), name. */
static const struct {
    cl_device_type type;
    unsigned units;
    uint64_t mem_mb;
    const char *name;
} fake[] = {
    {CL_DEVICE_TYPE_GPU, 16, 4096, "gpu-a"}, {CL_DEVICE_TYPE_CPU, 8, 16384, "cpu"},
    {CL_DEVICE_TYPE_GPU, 32, 512, "gpu-b"},  {CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_DEFAULT, 16, 8192, "gpu-c"},
    {CL_DEVICE_TYPE_ACCELERATOR, 4, 1024, "acc"},
};
static const int fake_nodes[] = {0, 0, 1, 1, 2};

static int fake_get(void *ctx, size_t i, const struct dql_attr *attr, struct dql_value *v)
{
    (void)ctx;
    switch (attr->param) {
    case CL_DEVICE_TYPE:
        v->number = fake[i].type;
        return 0;
    case CL_DEVICE_MAX_COMPUTE_UNITS:
        v->number = fake[i].units;
        return 0;
    case CL_DEVICE_GLOBAL_MEM_SIZE:
        v->number = fake[i].mem_mb << 20;
        return 0;
    case CL_DEVICE_NAME:
        v->string = (char *)fake[i].name;
        return 0;
    default:
        return -1; /* an attribute the device cannot report */
    }
}

/* The indices a query selects, as a string such as "2 0 3". */
static const char *run(const char *text)
{
    static char out[64];
    struct dql_query q;
    struct dql_error e;
    if (dql_parse(text, &q, &e) != 0)
        fail_msg("\"%s\": %s", text, e.message);
    size_t sel[5];
    int n = dql_select(&q, 5, fake_nodes, fake_get, NULL, sel);
    dql_free(&q);
    if (n < 0)
        return "error";
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%zu", i ? " " : "", sel[i]);
    return out;
}

static void test_selection(void **state)
{
    (void)state;
    assert_string_equal(run("SELECT ALL"), "0 1 2 3 4");
    assert_string_equal(run("SELECT ALL WHERE TYPE = GPU"), "0 2 3");
    assert_string_equal(run("SELECT ALL WHERE TYPE != GPU"), "1 4");
    assert_string_equal(run("SELECT ALL WHERE TYPE = DEFAULT"), "3");
    assert_string_equal(run("SELECT ALL FROM NODE 1"), "2 3");
    assert_string_equal(run("SELECT ALL FROM NODE 2, 0"), "0 1 4");
    assert_string_equal(run("SELECT ALL FROM NODE 9"), "");
    assert_string_equal(run("SELECT ALL WHERE GLOBAL_MEM_SIZE > 1024MB"), "0 1 3");
    assert_string_equal(run("SELECT ALL WHERE GLOBAL_MEM_SIZE >= 1GB AND TYPE = GPU"), "0 3");
    assert_string_equal(run("SELECT ALL WHERE MAX_COMPUTE_UNITS <= 8"), "1 4");
    assert_string_equal(run("SELECT ALL WHERE MAX_COMPUTE_UNITS < 8"), "4");
    assert_string_equal(run("SELECT ALL WHERE MAX_COMPUTE_UNITS = 16"), "0 3");
    assert_string_equal(run("SELECT ALL WHERE NAME = 'cpu'"), "1");
    assert_string_equal(run("SELECT ALL WHERE NAME != 'cpu'"), "0 2 3 4");
    /* Ties keep the platform order, in both directions. */
    assert_string_equal(run("SELECT ALL ORDER BY MAX_COMPUTE_UNITS DESC"), "2 0 3 1 4");
    assert_string_equal(run("SELECT ALL ORDER BY MAX_COMPUTE_UNITS"), "4 1 0 3 2");
    assert_string_equal(run("SELECT ALL ORDER BY NAME"), "4 1 0 2 3");
    assert_string_equal(run("SELECT TOP 2 WHERE TYPE = GPU ORDER BY GLOBAL_MEM_SIZE DESC"), "3 0");
    assert_string_equal(run("SELECT TOP 9 WHERE TYPE = GPU"), "0 2 3");
    assert_string_equal(run("SELECT POS 1 WHERE TYPE = GPU"), "2");
    assert_string_equal(run("SELECT POS 0 ORDER BY MAX_COMPUTE_UNITS DESC"), "2");
    assert_string_equal(run("SELECT POS 3 WHERE TYPE = GPU"), "");
    /* An attribute the devices cannot report is an error, not a miss. */
    assert_string_equal(run("SELECT ALL WHERE MAX_CLOCK_FREQUENCY > 1"), "error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_forms), cmocka_unit_test(test_full_query),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_attr_names),
        cmocka_unit_test(test_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
