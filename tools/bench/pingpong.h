/*
 * pingpong.h - what mpi-pingpong and ucx-pingpong share: their sizes
 * ("512K,16M": K, M, G suffixes) and the medians of their timings.
 */
#ifndef VOCL_PINGPONG_H
#define VOCL_PINGPONG_H

#include <stdlib.h>

static inline int pingpong_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The size at the head of s (up to a ',' or its end), or -1. */
static inline long pingpong_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    switch (*end) {
    case 'K': case 'k': v <<= 10; end++; break;
    case 'M': case 'm': v <<= 20; end++; break;
    case 'G': case 'g': v <<= 30; end++; break;
    default: break;
    }
    return (*end == '\0' || *end == ',') && v > 0 ? v : -1;
}

#endif
