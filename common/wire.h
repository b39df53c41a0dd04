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
#define VOCL_WIRE_VERSION 1u
#define VOCL_HDR_SIZE     16u

/* Largest control message either side accepts; bulk data travels in chunks. */
#define VOCL_MSG_MAX (16u << 20)

/* Payloads at most this large travel inside the request or reply. */
#define VOCL_INLINE_MAX (64u << 10)

/* MPI tags on the private communicator. */
enum vocl_tag {
    VOCL_TAG_REQ = 1,  /* client -> proxy: requests */
    VOCL_TAG_REP = 2,  /* proxy -> client: replies */
    VOCL_TAG_PING = 4, /* any rank -> any rank: are you there? (liveness.c) */
    VOCL_TAG_PONG = 5, /* the answer, from the peer's liveness thread */
    /* both ways: the chunks of one transfer, on a tag of its own (vocl_data_tag) */
    VOCL_TAG_DATA_MIN = 8,
    VOCL_TAG_DATA_MAX = 1023,
    /* proxy -> proxy: the chunks of one migration each, the client picks the tag */
    VOCL_TAG_PEER_MIN = 1024,
    VOCL_TAG_PEER_MAX = 32767, /* the least MPI_TAG_UB the standard allows */
};

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

/* Header encode/decode; decode returns false on bad magic or length. */
void vocl_hdr_put(uint8_t out[VOCL_HDR_SIZE], const struct vocl_msg_hdr *h);
bool vocl_hdr_get(const uint8_t *in, size_t n, struct vocl_msg_hdr *h);

#endif
