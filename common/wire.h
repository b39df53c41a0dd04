/*
 * wire.h - the VOCL wire format, shared by libvocl and voclproxyd.
 *
 * Every message is a 16-byte header followed by a payload of fixed-width
 * little-endian fields, written and read one field at a time.  Host structs
 * are never copied onto the wire.  The reader has a sticky failure flag: a
 * decoder reads all its fields, then checks the flag once, so a truncated or
 * oversized message can never make it read past the end.
 */
#ifndef VOCL_WIRE_H
#define VOCL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VOCL_WIRE_MAGIC   0x564fu /* "VO" */
#define VOCL_WIRE_VERSION 7u
#define VOCL_HDR_SIZE     16u

/* Largest control message either side accepts; bulk data travels in chunks. */
#define VOCL_MSG_MAX (16u << 20)

/* Payloads at most this large travel inside the request or reply. */
#define VOCL_INLINE_MAX (64u << 10)

/* MPI tags on the private communicator. */
enum vocl_tag {
    VOCL_TAG_REQ = 1,  /* client -> proxy: requests */
    VOCL_TAG_REP = 2,  /* proxy -> client: replies */
    VOCL_TAG_LINK = 3, /* connect mode, both ways, once: where each side runs (liveness.c) */
    VOCL_TAG_PING = 4, /* any rank -> any rank: are you there? (liveness.c) */
    VOCL_TAG_PONG = 5, /* the answer, from the peer's liveness thread */
    /* both ways: the chunks of one transfer, on a tag of its own (vocl_data_tag) */
    VOCL_TAG_DATA_MIN = 8,
    VOCL_TAG_DATA_MAX = 1023,
    /* proxy -> proxy: the chunks of one migration each, the client picks the tag */
    VOCL_TAG_PEER_MIN = 1024,
    VOCL_TAG_PEER_MAX = 32767, /* the least MPI_TAG_UB the standard allows */
    /* the same, relayed by the client between two daemons: on the session's
     * own channel, at its tag base plus vocl_relay_tag */
    VOCL_TAG_RELAY_MIN = 1024,
    VOCL_TAG_RELAY_MAX = 2047,
};
/* A peer tag's tag on a session's channel when the client relays it: below
 * the next tag base (wire.h, connect mode), and no chunk's. */
static inline int vocl_relay_tag(int peer_tag)
{
    return VOCL_TAG_RELAY_MIN +
           (peer_tag - VOCL_TAG_PEER_MIN) % (VOCL_TAG_RELAY_MAX - VOCL_TAG_RELAY_MIN + 1);
}

/*
 * The tag of the chunks of the transfer that request seq starts.  Each
 * transfer has its own, so a read held up by a user event holds up no other
 * read's chunks, and a chunk can never land in another transfer's memory.
 * Tags are reused after the span: where MPI_TAG_UB allows (set it with
 * vocl_data_tag_ub, the same on both sides), the span is above the peer tags
 * and large enough that no transfer lives that long.
 */
int vocl_data_tag(uint32_t seq);
void vocl_data_tag_ub(int tag_ub);

/* Header flags. */
#define VOCL_F_REPLY 0x1u /* the sender waits for a reply */

struct vocl_msg_hdr {
    uint16_t magic;
    uint16_t opcode;
    uint32_t flags;
    uint32_t length; /* payload bytes after the header */
    uint32_t seq;
};

/* Writer: grows its own buffer.  Allocation failure is sticky, like reading. */
struct vocl_wr {
    uint8_t *buf;
    size_t len, cap;
    bool fail;
};

/* Reader over a received message. */
struct vocl_rd {
    const uint8_t *p, *end;
    bool fail;
};

void vocl_wr_init(struct vocl_wr *w);
void vocl_wr_reset(struct vocl_wr *w);
void vocl_wr_free(struct vocl_wr *w);
/* Starts a message: reserves the header, filled in by vocl_wr_finish. */
void vocl_wr_begin(struct vocl_wr *w, uint16_t opcode, uint32_t flags, uint32_t seq);
void vocl_wr_finish(struct vocl_wr *w);
void vocl_wr_u8(struct vocl_wr *w, uint8_t v);
void vocl_wr_u32(struct vocl_wr *w, uint32_t v);
void vocl_wr_u64(struct vocl_wr *w, uint64_t v);
/* Overwrites the u32 written at offset at (a count known only later). */
void vocl_wr_u32_at(struct vocl_wr *w, size_t at, uint32_t v);
void vocl_wr_i32(struct vocl_wr *w, int32_t v);
/* Length-prefixed (u64) bytes; p may be NULL only when n is 0. */
void vocl_wr_bytes(struct vocl_wr *w, const void *p, size_t n);
/* A string as length-prefixed bytes without the NUL; NULL is length ~0. */
void vocl_wr_str(struct vocl_wr *w, const char *s);
/* Reserves n raw bytes and returns where to write them (NULL on failure). */
void *vocl_wr_reserve(struct vocl_wr *w, size_t n);

void vocl_rd_init(struct vocl_rd *r, const void *p, size_t n);
uint8_t vocl_rd_u8(struct vocl_rd *r);
uint32_t vocl_rd_u32(struct vocl_rd *r);
uint64_t vocl_rd_u64(struct vocl_rd *r);
int32_t vocl_rd_i32(struct vocl_rd *r);
/* Length-prefixed bytes: returns a pointer into the message and the length. */
const void *vocl_rd_bytes(struct vocl_rd *r, size_t *n);
/*
 * A string: returns a NUL-terminated copy in the caller's arena-less world
 * would need allocation, so instead *n gets the length and the pointer is into
 * the message (not terminated).  *is_null tells a NULL string from "".
 */
const char *vocl_rd_str(struct vocl_rd *r, size_t *n, bool *is_null);
/* True when every field was read and nothing is left over. */
bool vocl_rd_done(const struct vocl_rd *r);

/*
 * How the bytes of a transfer travel (field "mode" of writes, reads and
 * creates with host data):
 *   NONE     no data
 *   INLINE   in the message itself (small transfers)
 *   CHUNKED  u64 chunk size and u8 depth in the message, and ceil(size/chunk)
 *            messages on VOCL_TAG_DATA:
 *            after a write's request, from the client; for a read, from the
 *            proxy, each either the whole chunk or empty (the read failed),
 *            then the reply if the request wants one.  The client chooses
 *            chunk (at most the proxy's staging buffer size, from HELLO) and
 *            depth (how many chunks of a read the proxy keeps in flight)
 *            from what it measured of the link (libvocl/linkmeter.c).
 *   HOSTPTR  u64 host address: only for the in-process executor (local
 *            passthrough); a proxy rejects it from the wire
 */
enum vocl_data_mode { VOCL_DATA_NONE = 0, VOCL_DATA_INLINE, VOCL_DATA_CHUNKED, VOCL_DATA_HOSTPTR };

/*
 * Compound fields of the generated messages (vocl_msg.h, from cl_api.def).
 *
 * An array of u64 (handles, wait lists, new ids, property lists): u32
 * count, then the values.  An encoder reads v; a decoder leaves v NULL and
 * points raw into the message (little-endian, unaligned): read it with
 * vocl_ids_at.
 */
struct vocl_ids {
    uint32_t n;
    const uint64_t *v;
    const uint8_t *raw;
};
static inline uint64_t vocl_ids_at(const struct vocl_ids *a, uint32_t i)
{
    if (a->v)
        return a->v[i];
    uint64_t x = 0;
    for (int b = 7; b >= 0; b--)
        x = x << 8 | a->raw[8 * (size_t)i + (size_t)b];
    return x;
}
void vocl_wr_ids(struct vocl_wr *w, const struct vocl_ids *a);
/* Returns too_long (reading nothing more) when the count exceeds the message. */
const char *vocl_rd_ids(struct vocl_rd *r, struct vocl_ids *a, const char *too_long);

/* Three optional sizes (origins, regions): u8 present, then 3 x u64 if so. */
struct vocl_va3 {
    uint8_t present;
    uint64_t v[3];
};
void vocl_wr_va3(struct vocl_wr *w, const struct vocl_va3 *a);
void vocl_rd_va3(struct vocl_rd *r, struct vocl_va3 *a);

/*
 * The bulk data of a transfer (enum vocl_data_mode): u8 mode, then for
 * data the command sends (out) INLINE: bytes p/len, CHUNKED: u64 chunk size
 * (arg), u8 depth, HOSTPTR: u64 address (arg); for where a read's data goes
 * (in) the same without INLINE's bytes (they come in the reply).
 */
struct vocl_data {
    uint8_t mode;
    uint8_t depth;
    const void *p;
    uint64_t len;
    uint64_t arg;
};
void vocl_wr_data(struct vocl_wr *w, const struct vocl_data *d, bool out);
/* Returns why on an unknown mode (reading nothing more). */
const char *vocl_rd_data(struct vocl_rd *r, struct vocl_data *d, bool out);

/* A string (vocl_wr_str): NULL is not "".  Decoded: p points into the
 * message, not NUL-terminated. */
struct vocl_str {
    const char *p;
    uint64_t len;
    uint8_t null;
};
static inline struct vocl_str vocl_str_of(const char *s)
{
    struct vocl_str v = {.p = s, .null = s == NULL};
    for (const char *e = s; e && *e; e++)
        v.len++;
    return v;
}
void vocl_wr_sstr(struct vocl_wr *w, const struct vocl_str *s);
void vocl_rd_sstr(struct vocl_rd *r, struct vocl_str *s);

/* Bytes (a token, a notification's private info).  Decoded: p points into
 * the message.  As a field, length-prefixed (u64 length, vocl_wr_bytes);
 * as the last field of a message, "rest", without a length: the rest of
 * the message (kernel output). */
struct vocl_bytes {
    const void *p;
    size_t len;
};
void vocl_wr_sbytes(struct vocl_wr *w, const struct vocl_bytes *b);
void vocl_rd_sbytes(struct vocl_rd *r, struct vocl_bytes *b);
void vocl_wr_rest(struct vocl_wr *w, const struct vocl_bytes *b);
void vocl_rd_rest(struct vocl_rd *r, struct vocl_bytes *b);

/*
 * A list of byte strings (sources, binaries): u32 count, then count x
 * length-prefixed bytes.  An encoder reads p and len; a decoder checks every
 * item lies in the message and leaves raw/raw_len on the items, which
 * vocl_blist_next walks.
 */
struct vocl_blist {
    uint32_t n;
    const void *const *p;
    const size_t *len;
    const uint8_t *raw;
    size_t raw_len;
};
void vocl_wr_blist(struct vocl_wr *w, const struct vocl_blist *b);
void vocl_rd_blist(struct vocl_rd *r, struct vocl_blist *b);

/* n strings, n from another field (the header names of a compile). */
struct vocl_strs {
    const char *const *s;
    const uint8_t *raw;
    size_t raw_len;
};
void vocl_wr_strs(struct vocl_wr *w, const struct vocl_strs *s, uint32_t n);
void vocl_rd_strs(struct vocl_rd *r, struct vocl_strs *s, uint32_t n);

/* Up to three sizes, n from another field (work_dim): u8 present, n x u64. */
void vocl_wr_van(struct vocl_wr *w, const struct vocl_va3 *a, uint32_t n);
/* Returns why when n is above 3 (reading nothing more). */
const char *vocl_rd_van(struct vocl_rd *r, struct vocl_va3 *a, uint32_t n);

/*
 * The kernel arguments of a launch: u32 count, then per argument u32 index,
 * u8 kind (enum vocl_launch_arg) and the value: BYTES length-prefixed bytes
 * (p, len), MEM and SAMPLER a u64 id (v), LOCAL a u64 size (v).  Decoded:
 * raw/raw_len, walked by vocl_kargs_next.
 */
struct vocl_karg_wire {
    uint32_t index;
    uint8_t kind;
    const void *p;
    uint64_t len;
    uint64_t v;
};
struct vocl_launch_args {
    uint32_t n;
    const struct vocl_karg_wire *a;
    const uint8_t *raw;
    size_t raw_len;
};
void vocl_wr_kargs(struct vocl_wr *w, const struct vocl_launch_args *k);
/* Returns why on an unknown kind (reading nothing more). */
const char *vocl_rd_kargs(struct vocl_rd *r, struct vocl_launch_args *k);
/* The next argument of it (over raw/raw_len); false at the end. */
bool vocl_kargs_next(struct vocl_rd *it, struct vocl_karg_wire *a);

/* u32 count, then count u8 (kernel argument kinds).  Decoded: v points
 * into the message. */
struct vocl_u8s {
    uint32_t n;
    const uint8_t *v;
};
static inline uint8_t vocl_u8s_at(const struct vocl_u8s *a, uint32_t i)
{
    return a->v[i];
}
void vocl_wr_u8s(struct vocl_wr *w, const struct vocl_u8s *a);
/* Returns why (reading nothing more) when the count exceeds the message. */
const char *vocl_rd_u8s(struct vocl_rd *r, struct vocl_u8s *a);

/* u32 count, then count i32 (binary statuses).  Decoded: raw, read with
 * vocl_i32s_at. */
struct vocl_i32s {
    uint32_t n;
    const int32_t *v;
    const uint8_t *raw;
};
static inline int32_t vocl_i32s_at(const struct vocl_i32s *a, uint32_t i)
{
    if (a->v)
        return a->v[i];
    const uint8_t *p = a->raw + 4 * (size_t)i;
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}
void vocl_wr_i32s(struct vocl_wr *w, const struct vocl_i32s *a);
const char *vocl_rd_i32s(struct vocl_rd *r, struct vocl_i32s *a);

/* Header encode/decode; decode returns false on bad magic or length. */
void vocl_hdr_put(uint8_t out[VOCL_HDR_SIZE], const struct vocl_msg_hdr *h);
bool vocl_hdr_get(const uint8_t *in, size_t n, struct vocl_msg_hdr *h);

/* A BATCH (protocol.h): whole messages, one after the other, in the body
 * of one.  vocl_batch_add appends msg (a finished message) to batch,
 * beginning it if empty; vocl_wr_finish ends it.  vocl_batch_next takes
 * the next message off [*p, end): false at the end (*p == end) or where
 * what is left is not a whole message. */
void vocl_batch_add(struct vocl_wr *batch, const struct vocl_wr *msg);
bool vocl_batch_next(const uint8_t **p, const uint8_t *end, struct vocl_msg_hdr *h,
                     const uint8_t **msg);

#endif
