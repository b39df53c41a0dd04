/*
 * kernelparse.c - finds the kernel functions in OpenCL C source and classifies
 * their arguments.  It is not a compiler: it lexes the whole source, expands
 * object-like macros, and reads only top-level kernel declarations and
 * typedefs; braces are followed just to know what is top level.
 */
#include "kernelparse.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Limits that keep broken or hostile source from costing unbounded memory,
 * time or stack.  Real kernels stay far below every one of them. */
#define MAX_NAME            1024 /* bytes in a kernel, argument or type name */
#define MAX_ARGS            1024 /* arguments of one kernel */
#define MAX_KERNELS         (1u << 20)
#define MAX_MACROS          (1u << 24)
#define MAX_PARAM_TOKENS    65536 /* tokens in one argument list */
#define MAX_TYPEDEF_TOKENS  256   /* top-level tokens of a typedef worth reading */
#define MAX_DEPTH           256   /* nesting of braces, parentheses and brackets */
#define MAX_EXPANSION_DEPTH 128   /* macros expanding inside macros */
#define MAX_COND            64    /* #if levels followed for brace depth */
#define EXPANSION_PER_BYTE  16    /* macro output allowed per source byte */

enum tok_type { TOK_EOF, TOK_EOL, TOK_IDENT, TOK_NUMBER, TOK_STRING, TOK_PUNCT };

struct token {
    enum tok_type type;
    const char *text; /* into the spliced copy of the source */
    size_t len;
    unsigned line;
    unsigned char bol;   /* first token on its line */
    unsigned char space; /* whitespace or a comment comes before it */
};

struct tokvec {
    struct token *v;
    size_t n, cap;
};

/* Names to indexes: macros, typedefs and kernels.  Keys point into the
 * source copy or into kernel names, which outlive the map. */
struct map_slot {
    const char *key; /* NULL: empty slot */
    size_t len;
    unsigned value;
};

struct name_map {
    struct map_slot *slots;
    size_t cap, n;
};

struct lexer {
    const char *buf;
    size_t len, pos;
    unsigned line;
    int bol;       /* no token seen yet on the current line */
    int directive; /* inside a # line: its end comes back as TOK_EOL */
};

enum space { SPACE_NONE, SPACE_GLOBAL, SPACE_CONSTANT, SPACE_LOCAL, SPACE_PRIVATE, SPACE_GENERIC };

struct macro {
    struct tokvec body;
    int defined;
    int function_like; /* never expanded: reading arguments is beyond this parser */
};

struct frame { /* a macro being expanded */
    unsigned macro;
    size_t pos;
};

struct type_alias { /* what a typedef name stands for */
    enum kp_arg_kind base;
    enum space space;
    enum kp_access access;
    int is_ptr;
};

/* An #if group: each branch starts at the brace depth the #if saw, and the
 * first branch decides the depth after #endif.  This keeps
 * "#if A / f() { / #else / g() { / #endif" from opening two braces. */
struct cond {
    unsigned depth_before, depth_first;
    int in_first;
    int known_true; /* "#if 1": the other branches are dead */
};

struct parser {
    struct lexer lx;
    int failed; /* sticky: the first error wins and ends the parse */
    char *err;
    size_t errlen;

    struct macro *macros;
    size_t nmacros, macros_cap;
    struct name_map macro_names;
    struct frame frames[MAX_EXPANSION_DEPTH];
    unsigned nframes;
    unsigned expand_line; /* line of the outermost macro being expanded */
    size_t expand_budget; /* tokens that macros may still produce */

    struct type_alias *aliases;
    size_t naliases, aliases_cap;
    struct name_map alias_names;

    unsigned depth;     /* braces open */
    unsigned open_line; /* line of the outermost open brace */
    struct cond conds[MAX_COND];
    unsigned nconds, cond_overflow;
    unsigned skipping; /* > 0: in a dead branch ("#if 0"), counting nested #ifs */
    int skip_to_endif; /* the dead part ends at #endif only, not at #else */

    struct tokvec line;   /* one directive */
    struct tokvec params; /* one argument list or typedef */

    struct kp_program *prog;
    size_t kernels_cap;
    unsigned char *has_body; /* per kernel: seen with a body, not just declared */
    size_t has_body_cap;
    struct name_map kernel_names;
};

/* The words the parser acts on.  Everything else is an ordinary identifier. */
enum kw {
    KW_NONE,
    KW_ATTRIBUTE,
    KW_CONST,
    KW_RESTRICT,
    KW_VOLATILE,
    KW_SPACE,
    KW_ACCESS,
    KW_PIPE,
    KW_TAG,
    KW_SCALAR,
    KW_KERNEL,
    KW_KERNEL_EXEC,
    KW_TYPEDEF,
};

struct keyword {
    const char *word;
    enum kw kw;
    int value; /* enum space for KW_SPACE, enum kp_access for KW_ACCESS */
};

static const struct keyword keywords[] = {
    {"__attribute__", KW_ATTRIBUTE, 0},
    {"__attribute", KW_ATTRIBUTE, 0},
    {"const", KW_CONST, 0},
    {"__const", KW_CONST, 0},
    {"restrict", KW_RESTRICT, 0},
    {"__restrict", KW_RESTRICT, 0},
    {"__restrict__", KW_RESTRICT, 0},
    {"volatile", KW_VOLATILE, 0},
    {"__volatile", KW_VOLATILE, 0},
    {"__volatile__", KW_VOLATILE, 0},
    {"global", KW_SPACE, SPACE_GLOBAL},
    {"__global", KW_SPACE, SPACE_GLOBAL},
    {"constant", KW_SPACE, SPACE_CONSTANT},
    {"__constant", KW_SPACE, SPACE_CONSTANT},
    {"local", KW_SPACE, SPACE_LOCAL},
    {"__local", KW_SPACE, SPACE_LOCAL},
    {"private", KW_SPACE, SPACE_PRIVATE},
    {"__private", KW_SPACE, SPACE_PRIVATE},
    {"generic", KW_SPACE, SPACE_GENERIC},
    {"__generic", KW_SPACE, SPACE_GENERIC},
    {"read_only", KW_ACCESS, KP_ACCESS_READ_ONLY},
    {"__read_only", KW_ACCESS, KP_ACCESS_READ_ONLY},
    {"write_only", KW_ACCESS, KP_ACCESS_WRITE_ONLY},
    {"__write_only", KW_ACCESS, KP_ACCESS_WRITE_ONLY},
    {"read_write", KW_ACCESS, KP_ACCESS_READ_WRITE},
    {"__read_write", KW_ACCESS, KP_ACCESS_READ_WRITE},
    {"pipe", KW_PIPE, 0},
    {"struct", KW_TAG, 0},
    {"union", KW_TAG, 0},
    {"enum", KW_TAG, 0},
    {"void", KW_SCALAR, 0},
    {"bool", KW_SCALAR, 0},
    {"_Bool", KW_SCALAR, 0},
    {"char", KW_SCALAR, 0},
    {"short", KW_SCALAR, 0},
    {"int", KW_SCALAR, 0},
    {"long", KW_SCALAR, 0},
    {"float", KW_SCALAR, 0},
    {"double", KW_SCALAR, 0},
    {"half", KW_SCALAR, 0},
    {"signed", KW_SCALAR, 0},
    {"unsigned", KW_SCALAR, 0},
    {"kernel", KW_KERNEL, 0},
    {"__kernel", KW_KERNEL, 0},
    {"__kernel_exec", KW_KERNEL_EXEC, 0},
    {"kernel_exec", KW_KERNEL_EXEC, 0},
    {"typedef", KW_TYPEDEF, 0},
};

static const char *const image_types[] = {
    "image1d_t",
    "image1d_array_t",
    "image1d_buffer_t",
    "image2d_t",
    "image2d_array_t",
    "image2d_depth_t",
    "image2d_array_depth_t",
    "image2d_msaa_t",
    "image2d_array_msaa_t",
    "image2d_msaa_depth_t",
    "image2d_array_msaa_depth_t",
    "image3d_t",
};

/* Description of a declaration while it is read: one argument or typedef. */
struct decl {
    char type_name[MAX_NAME + 1];
    size_t type_len;
    const struct token *name; /* NULL when left out */
    const struct type_alias *alias;
    enum kp_arg_kind base;
    enum space space;
    enum kp_access access;
    unsigned ptr;
    int have_type, scalar;
    int is_const, is_restrict, is_volatile;
    /* On failure: */
    int code;
    const struct token *bad;
    const char *why;
};

static void fail(struct parser *p, int code, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(struct parser *p, int code, unsigned line, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = code;
    if (!p->err || !p->errlen)
        return;
    int n = snprintf(p->err, p->errlen, "line %u: ", line);
    if (n < 0 || (size_t)n >= p->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static void fail_nomem(struct parser *p)
{
    fail(p, KP_ERR_NOMEM, p->lx.line, "out of memory");
}

/* Room for element n in v (capacity *cap, elements of elem bytes): v itself,
 * or a larger copy, or NULL when out of memory (v is then still valid). */
static void *grow(void *v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return v;
    size_t ncap = *cap ? *cap * 2 : 8;
    if (ncap < *cap || ncap > SIZE_MAX / elem)
        return NULL;
    void *nv = realloc(v, ncap * elem);
    if (nv)
        *cap = ncap;
    return nv;
}

static int push_token(struct parser *p, struct tokvec *tv, const struct token *t)
{
    struct token *v = grow(tv->v, &tv->cap, tv->n, sizeof(*v));
    if (!v) {
        fail_nomem(p);
        return -1;
    }
    tv->v = v;
    tv->v[tv->n++] = *t;
    return 0;
}

static char *dup_text(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static size_t hash_name(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static struct map_slot *map_find(const struct name_map *m, const char *s, size_t len)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash_name(s, len) & mask;; i = (i + 1) & mask) {
        struct map_slot *slot = &m->slots[i];
        if (!slot->key)
            return NULL;
        if (slot->len == len && memcmp(slot->key, s, len) == 0)
            return slot;
    }
}

static int map_put(struct name_map *m, const char *s, size_t len, unsigned value)
{
    struct map_slot *slot = map_find(m, s, len);
    if (slot) {
        slot->value = value;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        if (ncap > SIZE_MAX / sizeof(*m->slots))
            return -1;
        struct map_slot *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].key)
                continue;
            size_t j = hash_name(m->slots[i].key, m->slots[i].len) & (ncap - 1);
            while (ns[j].key)
                j = (j + 1) & (ncap - 1);
            ns[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    size_t mask = m->cap - 1, i = hash_name(s, len) & mask;
    while (m->slots[i].key)
        i = (i + 1) & mask;
    m->slots[i] = (struct map_slot){s, len, value};
    m->n++;
    return 0;
}

/*
 * Translation phase 2: a copy of src without backslash-newline pairs, so
 * that nothing later has to care about them.  The newlines they held are put
 * back after the end of the logical line, which keeps the line numbers of
 * everything after it right.  The copy is never longer than src.
 */
static char *splice_lines(const char *src, size_t len, size_t *outlen)
{
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return NULL;
    size_t o = 0, pending = 0;
    for (size_t i = 0; i < len;) {
        if (src[i] == '\\' && i + 1 < len && src[i + 1] == '\n') {
            i += 2;
            pending++;
            continue;
        }
        if (src[i] == '\\' && i + 2 < len && src[i + 1] == '\r' && src[i + 2] == '\n') {
            i += 3;
            pending++;
            continue;
        }
        buf[o++] = src[i];
        if (src[i++] == '\n') {
            for (; pending; pending--)
                buf[o++] = '\n';
        }
    }
    *outlen = o;
    return buf;
}

static int is_ident_start(unsigned char c)
{
    return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_ident_char(unsigned char c)
{
    return is_ident_start(c) || is_digit(c);
}

/* Reads the next token.  Returns -1 (with t->line where it began) only for
 * an unterminated comment, after which nothing sensible can follow. */
static int lex_next(struct lexer *lx, struct token *t)
{
    const char *b = lx->buf;
    size_t n = lx->len, i = lx->pos;
    int space = 0;

    while (i < n) {
        unsigned char c = (unsigned char)b[i];
        if (c == '\n') {
            if (lx->directive)
                break;
            lx->line++;
            lx->bol = 1;
            space = 1;
            i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\0') {
            /* Compilers skip NUL bytes with a warning; so do we. */
            space = 1;
            i++;
        } else if (c == '/' && i + 1 < n && b[i + 1] == '/') {
            while (i < n && b[i] != '\n')
                i++;
            space = 1;
        } else if (c == '/' && i + 1 < n && b[i + 1] == '*') {
            unsigned start = lx->line;
            for (i += 2; i + 1 < n && !(b[i] == '*' && b[i + 1] == '/'); i++) {
                if (b[i] == '\n')
                    lx->line++;
            }
            if (i + 1 >= n) {
                lx->pos = n;
                t->line = start;
                return -1;
            }
            i += 2;
            space = 1;
        } else {
            break;
        }
    }

    t->text = b + i;
    t->len = 0;
    t->line = lx->line;
    t->bol = (unsigned char)lx->bol;
    t->space = (unsigned char)space;
    if (i >= n) {
        t->type = TOK_EOF;
        lx->pos = n;
        return 0;
    }

    unsigned char c = (unsigned char)b[i];
    size_t j = i + 1;
    lx->bol = 0;
    if (c == '\n') { /* only stops the loop above inside a directive */
        t->type = TOK_EOL;
        lx->line++;
        lx->bol = 1;
    } else if (is_ident_start(c)) {
        while (j < n && is_ident_char((unsigned char)b[j]))
            j++;
        t->type = TOK_IDENT;
    } else if (is_digit(c) || (c == '.' && j < n && is_digit((unsigned char)b[j]))) {
        /* A preprocessing number: 16, 1.5f, 0x1p-3. */
        for (; j < n; j++) {
            unsigned char d = (unsigned char)b[j];
            unsigned char prev = (unsigned char)b[j - 1];
            if (is_ident_char(d) || d == '.')
                continue;
            if ((d == '+' || d == '-') &&
                (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))
                continue;
            break;
        }
        t->type = TOK_NUMBER;
    } else if (c == '"' || c == '\'') {
        /* Ends at the closing quote or, unterminated, at the end of the line:
         * an apostrophe in "#error don't" must not swallow the source. */
        while (j < n && b[j] != '\n') {
            if (b[j] == '\\' && j + 1 < n && b[j + 1] != '\n') {
                j += 2;
            } else if ((unsigned char)b[j++] == c) {
                break;
            }
        }
        t->type = TOK_STRING;
    } else {
        t->type = TOK_PUNCT;
    }
    t->len = j - i;
    lx->pos = j;
    return 0;
}

static int tok_is(const struct token *t, const char *word)
{
    size_t n = strlen(word);
    return t->type == TOK_IDENT && t->len == n && memcmp(t->text, word, n) == 0;
}

static int is_punct(const struct token *t, char c)
{
    return t->type == TOK_PUNCT && t->text[0] == c;
}

static const struct keyword *find_keyword(const struct token *t)
{
    if (t->type != TOK_IDENT)
        return NULL;
    for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++) {
        if (tok_is(t, keywords[i].word))
            return &keywords[i];
    }
    return NULL;
}

static enum kw keyword_of(const struct token *t)
{
    const struct keyword *k = find_keyword(t);
    return k ? k->kw : KW_NONE;
}

/* The kind of the built-in types that carry an object handle. */
static enum kp_arg_kind handle_kind(const struct token *t)
{
    for (size_t i = 0; i < sizeof(image_types) / sizeof(image_types[0]); i++) {
        if (tok_is(t, image_types[i]))
            return KP_ARG_IMAGE;
    }
    if (tok_is(t, "sampler_t"))
        return KP_ARG_SAMPLER;
    if (tok_is(t, "queue_t"))
        return KP_ARG_QUEUE;
    return KP_ARG_VALUE;
}

/* A short printable name for t in an error message. */
static const char *describe(const struct token *t, char *buf, size_t size)
{
    switch (t->type) {
    case TOK_EOF:
        return "end of input";
    case TOK_EOL:
        return "end of line";
    case TOK_STRING:
        return "string literal";
    case TOK_IDENT:
    case TOK_NUMBER:
        snprintf(buf, size, "'%.*s%s'", (int)(t->len > 32 ? 32 : t->len), t->text,
                 t->len > 32 ? "..." : "");
        return buf;
    case TOK_PUNCT: {
        unsigned char c = (unsigned char)t->text[0];
        if (c > ' ' && c < 0x7f)
            snprintf(buf, size, "'%c'", c);
        else
            snprintf(buf, size, "byte 0x%02x", c);
        return buf;
    }
    }
    return "a token";
}

static void define_macro(struct parser *p)
{
    const struct token *v = p->line.v;
    size_t n = p->line.n;
    if (n < 2 || v[1].type != TOK_IDENT)
        return;
    /* "#define __global" and the like come from branches meant for host
     * compilers; as #if is not evaluated, obeying them would turn every
     * buffer argument into a plain pointer. */
    if (find_keyword(&v[1]) || handle_kind(&v[1]) != KP_ARG_VALUE)
        return;

    struct map_slot *slot = map_find(&p->macro_names, v[1].text, v[1].len);
    struct macro *m;
    if (slot) {
        m = &p->macros[slot->value];
        m->body.n = 0;
    } else {
        if (p->nmacros >= MAX_MACROS) {
            fail(p, KP_ERR_LIMIT, v[1].line, "more than %u macros", MAX_MACROS);
            return;
        }
        struct macro *nm = grow(p->macros, &p->macros_cap, p->nmacros, sizeof(*nm));
        if (!nm) {
            fail_nomem(p);
            return;
        }
        p->macros = nm;
        if (map_put(&p->macro_names, v[1].text, v[1].len, (unsigned)p->nmacros) < 0) {
            fail_nomem(p);
            return;
        }
        m = &p->macros[p->nmacros++];
        memset(m, 0, sizeof(*m));
    }
    m->defined = 1;
    /* "#define F(x)" takes arguments, "#define F (x)" does not. */
    m->function_like = n > 2 && is_punct(&v[2], '(') && !v[2].space;
    if (m->function_like)
        return;
    for (size_t i = 2; i < n; i++) {
        if (push_token(p, &m->body, &v[i]) < 0)
            return;
    }
}

static void cond_push(struct parser *p, int known_true)
{
    if (p->nconds == MAX_COND) {
        p->cond_overflow++;
        return;
    }
    p->conds[p->nconds++] = (struct cond){p->depth, p->depth, 1, known_true};
}

static void cond_else(struct parser *p)
{
    if (p->cond_overflow || !p->nconds)
        return;
    struct cond *c = &p->conds[p->nconds - 1];
    if (c->in_first) {
        c->depth_first = p->depth;
        c->in_first = 0;
    }
    p->depth = c->depth_before;
}

static void cond_pop(struct parser *p)
{
    if (p->cond_overflow) {
        p->cond_overflow--;
        return;
    }
    if (!p->nconds)
        return;
    struct cond *c = &p->conds[--p->nconds];
    if (!c->in_first)
        p->depth = c->depth_first;
}

/* The value of "#if 0" or "#if 1", the only conditions worth knowing
 * without a preprocessor: they are how code is switched off.  -1 otherwise. */
static int literal_condition(const struct tokvec *line)
{
    if (line->n != 2 || line->v[1].type != TOK_NUMBER || line->v[1].len != 1)
        return -1;
    if (line->v[1].text[0] == '0')
        return 0;
    return line->v[1].text[0] == '1' ? 1 : -1;
}

/* One # line.  Conditions other than a literal 0 or 1 are not evaluated:
 * every branch is read. */
static void directive(struct parser *p)
{
    struct token t;
    p->line.n = 0;
    p->lx.directive = 1;
    for (;;) {
        if (lex_next(&p->lx, &t) < 0) {
            fail(p, KP_ERR_SYNTAX, t.line, "unterminated comment");
            break;
        }
        if (t.type == TOK_EOL || t.type == TOK_EOF)
            break;
        if (push_token(p, &p->line, &t) < 0)
            break;
    }
    p->lx.directive = 0;
    if (p->failed || !p->line.n)
        return;

    const struct token *w = &p->line.v[0];
    int is_if = tok_is(w, "if") || tok_is(w, "ifdef") || tok_is(w, "ifndef");
    int is_else =
        tok_is(w, "elif") || tok_is(w, "else") || tok_is(w, "elifdef") || tok_is(w, "elifndef");
    int is_endif = tok_is(w, "endif");

    if (p->skipping) {
        if (is_if) {
            p->skipping++;
        } else if (is_endif && --p->skipping == 0 && p->skip_to_endif) {
            cond_pop(p); /* the "#if 1" whose dead #else this was */
        } else if (is_else && p->skipping == 1 && !p->skip_to_endif) {
            /* After "#if 0" the next branch is live, and is the first one
             * that counts for brace depth. */
            p->skipping = 0;
            cond_push(p, 0);
        }
        return;
    }

    if (tok_is(w, "define")) {
        define_macro(p);
    } else if (tok_is(w, "undef")) {
        struct map_slot *slot = NULL;
        if (p->line.n > 1 && p->line.v[1].type == TOK_IDENT)
            slot = map_find(&p->macro_names, p->line.v[1].text, p->line.v[1].len);
        if (slot)
            p->macros[slot->value].defined = 0;
    } else if (is_if) {
        int value = tok_is(w, "if") ? literal_condition(&p->line) : -1;
        if (value == 0) {
            p->skipping = 1;
            p->skip_to_endif = 0;
        } else {
            cond_push(p, value == 1);
        }
    } else if (is_else) {
        if (!p->cond_overflow && p->nconds && p->conds[p->nconds - 1].known_true) {
            p->skipping = 1;
            p->skip_to_endif = 1;
        } else {
            cond_else(p);
        }
    } else if (is_endif) {
        cond_pop(p);
    }
}

/* Starts expanding t when it names an object-like macro that is not already
 * being expanded; the second check is what stops "#define A A" looping. */
static int expand(struct parser *p, const struct token *t)
{
    struct map_slot *slot = map_find(&p->macro_names, t->text, t->len);
    if (!slot)
        return 0;
    const struct macro *m = &p->macros[slot->value];
    if (!m->defined || m->function_like)
        return 0;
    for (unsigned i = 0; i < p->nframes; i++) {
        if (p->frames[i].macro == slot->value)
            return 0;
    }
    if (p->nframes == MAX_EXPANSION_DEPTH) {
        fail(p, KP_ERR_LIMIT, t->line, "macros nested more than %d deep", MAX_EXPANSION_DEPTH);
        return 1;
    }
    if (m->body.n > p->expand_budget) {
        fail(p, KP_ERR_LIMIT, t->line, "macro expansion too large");
        return 1;
    }
    p->expand_budget -= m->body.n;
    if (!p->nframes)
        p->expand_line = t->line;
    p->frames[p->nframes++] = (struct frame){slot->value, 0};
    return 1;
}

static void track_brace(struct parser *p, const struct token *t)
{
    if (is_punct(t, '{')) {
        if (p->depth >= MAX_DEPTH) {
            fail(p, KP_ERR_LIMIT, t->line, "braces nested more than %d deep", MAX_DEPTH);
            return;
        }
        if (!p->depth)
            p->open_line = t->line;
        p->depth++;
    } else {
        if (!p->depth) {
            fail(p, KP_ERR_SYNTAX, t->line, "'}' without a matching '{'");
            return;
        }
        p->depth--;
    }
}

/* The next token after macro expansion, with directives handled and brace
 * depth updated.  After an error it is always TOK_EOF, so every loop over
 * tokens ends. */
static void next_token(struct parser *p, struct token *t)
{
    for (;;) {
        if (p->failed) {
            memset(t, 0, sizeof(*t));
            t->type = TOK_EOF;
            t->text = "";
            t->line = p->lx.line;
            return;
        }
        while (p->nframes) {
            const struct frame *f = &p->frames[p->nframes - 1];
            if (f->pos < p->macros[f->macro].body.n)
                break;
            p->nframes--;
        }
        if (p->nframes) {
            struct frame *f = &p->frames[p->nframes - 1];
            *t = p->macros[f->macro].body.v[f->pos++];
            t->line = p->expand_line;
            t->bol = 0;
        } else {
            if (lex_next(&p->lx, t) < 0) {
                fail(p, KP_ERR_SYNTAX, t->line, "unterminated comment");
                continue;
            }
            if (t->bol && is_punct(t, '#')) {
                directive(p);
                continue;
            }
            if (p->skipping && t->type != TOK_EOF)
                continue;
        }
        if (t->type == TOK_IDENT && expand(p, t))
            continue;
        if (is_punct(t, '{') || is_punct(t, '}'))
            track_brace(p, t);
        return;
    }
}

/* Skips the parenthesised group that must follow at (__attribute__ or
 * __kernel_exec).  0 when the source is malformed. */
static int skip_parens(struct parser *p, const struct token *at)
{
    struct token t;
    char desc[48];
    int wlen = (int)(at->len > 32 ? 32 : at->len);

    next_token(p, &t);
    if (!is_punct(&t, '(')) {
        fail(p, KP_ERR_SYNTAX, t.line, "expected '(' after '%.*s', found %s", wlen, at->text,
             describe(&t, desc, sizeof(desc)));
        return 0;
    }
    for (unsigned depth = 1; depth;) {
        next_token(p, &t);
        if (is_punct(&t, '(')) {
            if (++depth > MAX_DEPTH) {
                fail(p, KP_ERR_LIMIT, t.line, "parentheses nested more than %d deep", MAX_DEPTH);
                return 0;
            }
        } else if (is_punct(&t, ')')) {
            depth--;
        } else if (t.type == TOK_EOF || is_punct(&t, '{') || is_punct(&t, '}') ||
                   is_punct(&t, ';')) {
            fail(p, KP_ERR_SYNTAX, t.line, "unexpected %s in '%.*s(...)'",
                 describe(&t, desc, sizeof(desc)), wlen, at->text);
            return 0;
        }
    }
    return 1;
}

/* Index of the token that closes the ( or [ at t[i], or n if none does. */
static size_t match_group(const struct token *t, size_t n, size_t i)
{
    size_t depth = 0;
    for (; i < n; i++) {
        if (is_punct(&t[i], '(') || is_punct(&t[i], '[')) {
            depth++;
        } else if (is_punct(&t[i], ')') || is_punct(&t[i], ']')) {
            if (--depth == 0)
                return i;
        }
    }
    return n;
}

static int decl_error(struct decl *d, const struct token *bad, int code, const char *why)
{
    d->bad = bad;
    d->code = code;
    d->why = why;
    return -1;
}

static int append_type_word(struct decl *d, const struct token *t)
{
    size_t sep = d->type_len ? 1 : 0;
    if (t->len > MAX_NAME - d->type_len - sep)
        return -1;
    if (sep)
        d->type_name[d->type_len++] = ' ';
    memcpy(d->type_name + d->type_len, t->text, t->len);
    d->type_len += t->len;
    d->type_name[d->type_len] = '\0';
    return 0;
}

/* What a type name that is not a C keyword means on its own. */
static void resolve_type_name(const struct parser *p, const struct token *t, struct decl *d)
{
    d->base = handle_kind(t);
    if (d->base != KP_ARG_VALUE)
        return;
    struct map_slot *slot = map_find(&p->alias_names, t->text, t->len);
    if (slot)
        d->alias = &p->aliases[slot->value];
}

/*
 * Reads one declaration, t[0..n): an argument, or a typedef without the
 * word typedef.  Fills d; on failure returns -1 with d->bad, d->code and
 * d->why saying what went wrong.  Iterative, so no input can nest it deep.
 */
static int parse_decl(const struct parser *p, const struct token *t, size_t n, struct decl *d)
{
    memset(d, 0, sizeof(*d));
    d->base = KP_ARG_VALUE;

    for (size_t i = 0; i < n; i++) {
        const struct token *tk = &t[i];
        if (is_punct(tk, '*')) {
            if (!d->have_type || d->name)
                return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
            d->ptr = 1;
            continue;
        }
        if (is_punct(tk, '[')) {
            /* An array argument is a pointer, as in C. */
            size_t close = match_group(t, n, i);
            if (close == n)
                return decl_error(d, tk, KP_ERR_SYNTAX, "unbalanced");
            if (!d->have_type)
                return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
            d->ptr = 1;
            i = close;
            continue;
        }
        if (tk->type != TOK_IDENT)
            return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");

        const struct keyword *k = find_keyword(tk);
        enum kw kw = k ? k->kw : KW_NONE;
        /* Words that programs older than OpenCL C 2.0 may use as names. */
        if (kw == KW_PIPE && (d->have_type || i + 1 >= n || t[i + 1].type != TOK_IDENT))
            kw = KW_NONE;
        if (kw == KW_SPACE && tok_is(tk, "generic") && i + 1 >= n)
            kw = KW_NONE;

        switch (kw) {
        case KW_ATTRIBUTE: {
            if (i + 1 >= n || !is_punct(&t[i + 1], '('))
                return decl_error(d, tk, KP_ERR_SYNTAX, "expected '(' after");
            size_t close = match_group(t, n, i + 1);
            if (close == n)
                return decl_error(d, tk, KP_ERR_SYNTAX, "unbalanced parentheses after");
            i = close;
            break;
        }
        case KW_CONST:
            if (!d->ptr) /* after '*' it qualifies the pointer, not the data */
                d->is_const = 1;
            break;
        case KW_VOLATILE:
            if (!d->ptr)
                d->is_volatile = 1;
            break;
        case KW_RESTRICT:
            d->is_restrict = 1;
            break;
        case KW_SPACE:
            if (d->ptr) /* the pointer's own address space: not what it points to */
                break;
            if (d->space && d->space != (enum space)k->value)
                return decl_error(d, tk, KP_ERR_SYNTAX, "conflicting address space");
            d->space = (enum space)k->value;
            break;
        case KW_ACCESS:
            if (d->access && d->access != (enum kp_access)k->value)
                return decl_error(d, tk, KP_ERR_SYNTAX, "conflicting access qualifier");
            d->access = (enum kp_access)k->value;
            break;
        case KW_PIPE:
            d->base = KP_ARG_PIPE;
            break;
        case KW_TAG:
            if (d->have_type || d->ptr)
                return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
            if (append_type_word(d, tk) < 0)
                return decl_error(d, tk, KP_ERR_LIMIT, "type name too long at");
            if (i + 1 < n && t[i + 1].type == TOK_IDENT) {
                i++;
                if (append_type_word(d, &t[i]) < 0)
                    return decl_error(d, &t[i], KP_ERR_LIMIT, "type name too long at");
            } else if (i + 1 >= n || !is_punct(&t[i + 1], '{')) {
                return decl_error(d, tk, KP_ERR_SYNTAX, "expected a tag or '{' after");
            }
            if (i + 1 < n && is_punct(&t[i + 1], '{')) {
                size_t depth = 0, j;
                for (j = i + 1; j < n; j++) {
                    if (is_punct(&t[j], '{'))
                        depth++;
                    else if (is_punct(&t[j], '}') && --depth == 0)
                        break;
                }
                if (j == n)
                    return decl_error(d, &t[i + 1], KP_ERR_SYNTAX, "unbalanced");
                i = j;
            }
            d->have_type = 1;
            break;
        case KW_SCALAR:
            /* "unsigned long int" is one type; "uint int" is not. */
            if (d->name || d->ptr || (d->have_type && !d->scalar))
                return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
            if (append_type_word(d, tk) < 0)
                return decl_error(d, tk, KP_ERR_LIMIT, "type name too long at");
            d->have_type = d->scalar = 1;
            break;
        case KW_KERNEL:
        case KW_KERNEL_EXEC:
        case KW_TYPEDEF:
            return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
        case KW_NONE:
            if (!d->have_type) {
                if (append_type_word(d, tk) < 0)
                    return decl_error(d, tk, KP_ERR_LIMIT, "type name too long at");
                d->have_type = 1;
                if (d->base != KP_ARG_PIPE) /* the element type of a pipe does not matter */
                    resolve_type_name(p, tk, d);
            } else if (!d->name) {
                if (tk->len > MAX_NAME)
                    return decl_error(d, tk, KP_ERR_LIMIT, "name too long at");
                d->name = tk;
            } else {
                return decl_error(d, tk, KP_ERR_SYNTAX, "unexpected");
            }
            break;
        }
    }
    if (!d->have_type)
        return decl_error(d, n ? &t[n - 1] : NULL, KP_ERR_SYNTAX, "expected a type near");

    if (d->alias) {
        d->base = d->alias->base;
        d->ptr = d->ptr || d->alias->is_ptr;
        if (!d->space)
            d->space = d->alias->space;
        if (!d->access)
            d->access = d->alias->access;
    }
    return 0;
}

static enum kp_arg_kind decl_kind(const struct decl *d)
{
    if (!d->ptr || d->base == KP_ARG_PIPE)
        return d->base;
    switch (d->space) {
    case SPACE_GLOBAL:
        return KP_ARG_GLOBAL_PTR;
    case SPACE_CONSTANT:
        return KP_ARG_CONSTANT_PTR;
    case SPACE_LOCAL:
        return KP_ARG_LOCAL_PTR;
    case SPACE_NONE:
    case SPACE_PRIVATE:
    case SPACE_GENERIC:
        break;
    }
    return KP_ARG_PRIVATE_PTR;
}

static int is_void_alone(const struct decl *d)
{
    return !d->ptr && !d->name && !d->alias && !d->space && !d->access && d->base == KP_ARG_VALUE &&
           strcmp(d->type_name, "void") == 0;
}

static void free_args(struct kp_arg *args, unsigned nargs)
{
    for (unsigned i = 0; i < nargs; i++) {
        free(args[i].name);
        free(args[i].type_name);
    }
    free(args);
}

static int fill_arg(struct kp_arg *a, const struct decl *d)
{
    a->name = d->name ? dup_text(d->name->text, d->name->len) : dup_text("", 0);
    a->type_name = dup_text(d->type_name, d->type_len);
    if (!a->name || !a->type_name) {
        free(a->name);
        free(a->type_name);
        a->name = a->type_name = NULL;
        return -1;
    }
    a->kind = decl_kind(d);
    a->access = d->access;
    /* Images and pipes are read_only unless declared otherwise. */
    if (!a->access && (a->kind == KP_ARG_IMAGE || a->kind == KP_ARG_PIPE))
        a->access = KP_ACCESS_READ_ONLY;
    a->is_const = d->is_const ? 1u : 0u;
    a->is_restrict = d->is_restrict ? 1u : 0u;
    a->is_volatile = d->is_volatile ? 1u : 0u;
    return 0;
}

/* Turns the argument list in p->params into kp_args for kernel kname. */
static int build_args(struct parser *p, const struct token *kname, struct kp_arg **out,
                      unsigned *nout)
{
    const struct token *t = p->params.v;
    size_t n = p->params.n;
    int klen = (int)(kname->len > 64 ? 64 : kname->len);
    char desc[48];

    *out = NULL;
    *nout = 0;
    if (!n)
        return 0;

    size_t count = 1, depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_punct(&t[i], '(') || is_punct(&t[i], '['))
            depth++;
        else if ((is_punct(&t[i], ')') || is_punct(&t[i], ']')) && depth)
            depth--;
        else if (is_punct(&t[i], ',') && !depth)
            count++;
    }
    if (count > MAX_ARGS) {
        fail(p, KP_ERR_LIMIT, kname->line, "kernel '%.*s' has more than %d arguments", klen,
             kname->text, MAX_ARGS);
        return -1;
    }
    struct kp_arg *args = calloc(count, sizeof(*args));
    if (!args) {
        fail_nomem(p);
        return -1;
    }

    unsigned nargs = 0;
    size_t start = 0;
    depth = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n) {
            if (is_punct(&t[i], '(') || is_punct(&t[i], '['))
                depth++;
            else if ((is_punct(&t[i], ')') || is_punct(&t[i], ']')) && depth)
                depth--;
            if (!is_punct(&t[i], ',') || depth)
                continue;
        }
        struct decl d;
        if (i == start) {
            const struct token *at = i < n ? &t[i] : &t[n - 1];
            fail(p, KP_ERR_SYNTAX, at->line, "kernel '%.*s': argument %u is empty", klen,
                 kname->text, nargs + 1);
            goto out_free_args;
        }
        if (parse_decl(p, t + start, i - start, &d) < 0) {
            const struct token *at = d.bad ? d.bad : &t[start];
            fail(p, d.code, at->line, "kernel '%.*s': argument %u: %s %s", klen, kname->text,
                 nargs + 1, d.why, describe(at, desc, sizeof(desc)));
            goto out_free_args;
        }
        if (is_void_alone(&d)) {
            if (count == 1)
                break; /* "kernel void f(void)" */
            fail(p, KP_ERR_SYNTAX, t[start].line, "kernel '%.*s': 'void' must be the only argument",
                 klen, kname->text);
            goto out_free_args;
        }
        if (fill_arg(&args[nargs], &d) < 0) {
            fail_nomem(p);
            goto out_free_args;
        }
        nargs++;
        start = i + 1;
    }
    if (!nargs) {
        free(args);
        args = NULL;
    }
    *out = args;
    *nout = nargs;
    return 0;

out_free_args:
    free_args(args, nargs);
    return -1;
}

/* Records a kernel, taking args.  A kernel seen twice (a prototype and its
 * definition) stays one entry, with the argument names of the definition. */
static void add_kernel(struct parser *p, const struct token *name, struct kp_arg *args,
                       unsigned nargs, int has_body)
{
    struct kp_program *prog = p->prog;
    struct map_slot *slot = map_find(&p->kernel_names, name->text, name->len);
    if (slot) {
        struct kp_kernel *k = &prog->kernels[slot->value];
        if (has_body && !p->has_body[slot->value]) {
            free_args(k->args, k->nargs);
            k->args = args;
            k->nargs = nargs;
            p->has_body[slot->value] = 1;
        } else {
            free_args(args, nargs);
        }
        return;
    }

    if (prog->nkernels >= MAX_KERNELS) {
        fail(p, KP_ERR_LIMIT, name->line, "more than %u kernels", MAX_KERNELS);
        goto out_free_args;
    }
    struct kp_kernel *kernels =
        grow(prog->kernels, &p->kernels_cap, prog->nkernels, sizeof(*kernels));
    if (!kernels)
        goto out_nomem;
    prog->kernels = kernels;
    unsigned char *has = grow(p->has_body, &p->has_body_cap, prog->nkernels, 1);
    if (!has)
        goto out_nomem;
    p->has_body = has;
    char *s = dup_text(name->text, name->len);
    if (!s)
        goto out_nomem;
    if (map_put(&p->kernel_names, s, name->len, prog->nkernels) < 0)
        goto out_free_name;

    kernels[prog->nkernels] = (struct kp_kernel){s, nargs, args};
    has[prog->nkernels] = has_body ? 1 : 0;
    prog->nkernels++;
    return;

out_free_name:
    free(s);
out_nomem:
    fail_nomem(p);
out_free_args:
    free_args(args, nargs);
}

/* After the word kernel (or __kernel_exec) at top level: the rest of the
 * declaration, up to its ';' or the '{' of its body. */
static void parse_kernel(struct parser *p, const struct token *kw_tok, enum kw kw)
{
    struct token t, name = {0};
    int have_name = 0;
    char desc[48];

    if (kw == KW_KERNEL_EXEC && !skip_parens(p, kw_tok))
        return;
    /* Attributes, the return type, the name. */
    for (;;) {
        next_token(p, &t);
        if (t.type == TOK_IDENT) {
            if (keyword_of(&t) == KW_ATTRIBUTE) {
                if (!skip_parens(p, &t))
                    return;
                continue;
            }
            name = t;
            have_name = 1;
            continue;
        }
        if (have_name && is_punct(&t, '('))
            break;
        fail(p, KP_ERR_SYNTAX, t.line, "expected a kernel name and '(', found %s",
             describe(&t, desc, sizeof(desc)));
        return;
    }
    if (keyword_of(&name) != KW_NONE) {
        fail(p, KP_ERR_SYNTAX, name.line, "expected a kernel name, found %s",
             describe(&name, desc, sizeof(desc)));
        return;
    }
    if (name.len > MAX_NAME) {
        fail(p, KP_ERR_LIMIT, name.line, "kernel name longer than %d bytes", MAX_NAME);
        return;
    }
    int klen = (int)(name.len > 64 ? 64 : name.len);

    /* The argument list, gathered to its closing ')'. */
    p->params.n = 0;
    for (unsigned depth = 0;;) {
        next_token(p, &t);
        if (is_punct(&t, ')') && !depth)
            break;
        if (is_punct(&t, '(') || is_punct(&t, '[')) {
            if (++depth > MAX_DEPTH) {
                fail(p, KP_ERR_LIMIT, t.line, "parentheses nested more than %d deep", MAX_DEPTH);
                return;
            }
        } else if (is_punct(&t, ')') || is_punct(&t, ']')) {
            if (!depth) {
                fail(p, KP_ERR_SYNTAX, t.line, "kernel '%.*s': unbalanced ']'", klen, name.text);
                return;
            }
            depth--;
        } else if (t.type == TOK_EOF || is_punct(&t, '{') || is_punct(&t, '}') ||
                   is_punct(&t, ';')) {
            fail(p, KP_ERR_SYNTAX, t.line, "kernel '%.*s': unexpected %s in the arguments", klen,
                 name.text, describe(&t, desc, sizeof(desc)));
            return;
        }
        if (p->params.n >= MAX_PARAM_TOKENS) {
            fail(p, KP_ERR_LIMIT, t.line, "kernel '%.*s': argument list too long", klen, name.text);
            return;
        }
        if (push_token(p, &p->params, &t) < 0)
            return;
    }

    struct kp_arg *args;
    unsigned nargs;
    if (build_args(p, &name, &args, &nargs) < 0)
        return;

    /* Attributes, then a body or the ';' of a prototype.  The body itself is
     * skipped by parse_program, which reads only at brace depth 0. */
    int has_body = -1;
    while (has_body < 0) {
        next_token(p, &t);
        if (keyword_of(&t) == KW_ATTRIBUTE) {
            if (!skip_parens(p, &t))
                goto out_free_args;
        } else if (is_punct(&t, '{')) {
            has_body = 1;
        } else if (is_punct(&t, ';')) {
            has_body = 0;
        } else {
            fail(p, KP_ERR_SYNTAX, t.line,
                 "kernel '%.*s': expected '{' or ';' after the arguments, found %s", klen,
                 name.text, describe(&t, desc, sizeof(desc)));
            goto out_free_args;
        }
    }
    add_kernel(p, &name, args, nargs, has_body);
    return;

out_free_args:
    free_args(args, nargs);
}

/*
 * After the word typedef at top level.  Remembers what the new name stands
 * for, so that after "typedef __global float *gptr;" an argument "gptr p" is
 * a global pointer.  Typedefs it cannot read (function types) are skipped;
 * of "typedef struct s S, *PS;" only S is recorded.
 */
static void parse_typedef(struct parser *p)
{
    struct token t;
    int too_long = 0;

    p->params.n = 0;
    for (;;) {
        next_token(p, &t);
        if (t.type == TOK_EOF)
            return;
        if (!p->depth && is_punct(&t, ';'))
            break;
        if (!p->depth) {
            /* A missing ';': better to read the kernel than to swallow it. */
            enum kw kw = keyword_of(&t);
            if (kw == KW_KERNEL || kw == KW_KERNEL_EXEC) {
                parse_kernel(p, &t, kw);
                return;
            }
        }
        /* Keep the top level and the braces around a struct body, not the body. */
        if (!p->depth || (p->depth == 1 && is_punct(&t, '{'))) {
            if (p->params.n == MAX_TYPEDEF_TOKENS)
                too_long = 1;
            else if (push_token(p, &p->params, &t) < 0)
                return;
        }
    }
    if (too_long)
        return;

    size_t n = p->params.n, depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_punct(&p->params.v[i], '(') || is_punct(&p->params.v[i], '['))
            depth++;
        else if ((is_punct(&p->params.v[i], ')') || is_punct(&p->params.v[i], ']')) && depth)
            depth--;
        else if (is_punct(&p->params.v[i], ',') && !depth) {
            n = i;
            break;
        }
    }
    struct decl d;
    if (parse_decl(p, p->params.v, n, &d) < 0 || !d.name)
        return;

    struct type_alias *a = grow(p->aliases, &p->aliases_cap, p->naliases, sizeof(*a));
    if (!a) {
        fail_nomem(p);
        return;
    }
    p->aliases = a;
    if (map_put(&p->alias_names, d.name->text, d.name->len, (unsigned)p->naliases) < 0) {
        fail_nomem(p);
        return;
    }
    a[p->naliases++] = (struct type_alias){d.base, d.space, d.access, d.ptr != 0};
}

static void parse_program(struct parser *p)
{
    struct token t;
    for (;;) {
        next_token(p, &t);
        if (t.type == TOK_EOF)
            break;
        if (t.type != TOK_IDENT || p->depth)
            continue;
        enum kw kw = keyword_of(&t);
        if (kw == KW_KERNEL || kw == KW_KERNEL_EXEC)
            parse_kernel(p, &t, kw);
        else if (kw == KW_TYPEDEF)
            parse_typedef(p);
    }
    if (p->depth)
        fail(p, KP_ERR_SYNTAX, p->open_line, "'{' is never closed");
}

static void parser_free(struct parser *p)
{
    for (size_t i = 0; i < p->nmacros; i++)
        free(p->macros[i].body.v);
    free(p->macros);
    free(p->macro_names.slots);
    free(p->aliases);
    free(p->alias_names.slots);
    free(p->line.v);
    free(p->params.v);
    free(p->has_body);
    free(p->kernel_names.slots);
}

int kp_parse(const char *src, size_t len, struct kp_program **out, char *err, size_t errlen)
{
    struct parser p;
    memset(&p, 0, sizeof(p));
    p.err = err;
    p.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';

    if (out)
        *out = NULL;
    if (!out || (!src && len)) {
        fail(&p, KP_ERR_INVALID, 0, "kp_parse called with %s", out ? "no source" : "no output");
        return p.failed;
    }

    /* A byte-order mark would hide a directive on the first line. */
    if (len >= 3 && memcmp(src, "\xef\xbb\xbf", 3) == 0) {
        src += 3;
        len -= 3;
    }
    size_t blen = 0;
    char *buf = splice_lines(src ? src : "", len, &blen);
    if (!buf) {
        fail_nomem(&p);
        return p.failed;
    }
    p.lx = (struct lexer){buf, blen, 0, 1, 1, 0};
    p.expand_budget =
        len < (SIZE_MAX - 65536) / EXPANSION_PER_BYTE ? len * EXPANSION_PER_BYTE + 65536 : SIZE_MAX;

    p.prog = calloc(1, sizeof(*p.prog));
    if (p.prog)
        parse_program(&p);
    else
        fail_nomem(&p);

    int rc = p.failed;
    parser_free(&p);
    free(buf);
    if (rc) {
        kp_free(p.prog);
        return rc;
    }
    *out = p.prog;
    return KP_OK;
}

void kp_free(struct kp_program *prog)
{
    if (!prog)
        return;
    for (unsigned i = 0; i < prog->nkernels; i++) {
        free(prog->kernels[i].name);
        free_args(prog->kernels[i].args, prog->kernels[i].nargs);
    }
    free(prog->kernels);
    free(prog);
}

const struct kp_kernel *kp_find_kernel(const struct kp_program *prog, const char *name)
{
    if (!prog || !name)
        return NULL;
    for (unsigned i = 0; i < prog->nkernels; i++) {
        if (strcmp(prog->kernels[i].name, name) == 0)
            return &prog->kernels[i];
    }
    return NULL;
}

const char *kp_arg_kind_name(enum kp_arg_kind kind)
{
    switch (kind) {
    case KP_ARG_VALUE:
        return "value";
    case KP_ARG_GLOBAL_PTR:
        return "global_ptr";
    case KP_ARG_CONSTANT_PTR:
        return "constant_ptr";
    case KP_ARG_LOCAL_PTR:
        return "local_ptr";
    case KP_ARG_PRIVATE_PTR:
        return "private_ptr";
    case KP_ARG_IMAGE:
        return "image";
    case KP_ARG_SAMPLER:
        return "sampler";
    case KP_ARG_PIPE:
        return "pipe";
    case KP_ARG_QUEUE:
        return "queue";
    }
    return "unknown";
}

const char *kp_access_name(enum kp_access access)
{
    switch (access) {
    case KP_ACCESS_NONE:
        return "none";
    case KP_ACCESS_READ_ONLY:
        return "read_only";
    case KP_ACCESS_WRITE_ONLY:
        return "write_only";
    case KP_ACCESS_READ_WRITE:
        return "read_write";
    }
    return "unknown";
}
