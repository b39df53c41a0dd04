/*
 * scratch.h - a unit test's scratch folder: made (mkdtemp) before its
 * group, removed with everything in it after (cmocka group fixtures).
 */
#ifndef VOCL_TEST_SCRATCH_H
#define VOCL_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>

/* dir: a mkdtemp template, made by the group's setup. */
static inline int scratch_remove(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd);
}

#endif
