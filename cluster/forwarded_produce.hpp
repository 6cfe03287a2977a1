#pragma once
// A produce forwarded to a partition's owner, batched per owner: the body of
// `POST /cluster/topics/{topic}/records` and its answer (docs/cluster-api.md).
// A broker that takes a client's produce for several partitions another
// broker owns sends them in one request (one HTTP round trip and one sync
// round on the owner instead of one per partition); the owner answers each
// part on its own, so a part refused for a move's cutover is re-routed alone.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moonmq::cluster {

/// One partition's part: an encoded v2 record batch (offsets assigned by the
/// owner).
struct forwarded_part {
  int32_t partition = 0;
  std::string batch;
};

/// The request body: for each part in order, the partition (int32,
/// big-endian), the batch's length in bytes (int32, big-endian) and the
/// batch. Parts keep their order; a partition may appear more than once
/// (appended in body order).
std::string encode_forwarded_parts(const std::vector<forwarded_part>& parts);

/// Bytes one part with `batch_bytes` of batch takes in that body (its
/// 8-byte header included), for sizing a body before it is built.
inline constexpr size_t forwarded_part_header_bytes = 8;
inline size_t forwarded_part_bytes(size_t batch_bytes) { return forwarded_part_header_bytes + batch_bytes; }

/// Appends one part to a body of that format (what encode_forwarded_parts
/// does for each part), for a sender that keeps its batches elsewhere.
void append_forwarded_part(std::string& body, int32_t partition, std::string_view batch);

/// Decodes a body written by encode_forwarded_parts into `out` (cleared
/// first). "" on success; else why the body is malformed (no part, a frame
/// cut short, a negative partition or length), and `out` is empty.
std::string decode_forwarded_parts(std::string_view body, std::vector<forwarded_part>& out);

/// The owner's answer to one part: appended at `base_offset` (status 200),
/// or refused with the status, error code and message a single-partition
/// produce would get (CONTRACT §3), and for 421 `not_owner` the broker the
/// owner's image names (`owner`).
struct forwarded_answer {
  int32_t partition = 0;
  int status = 200;
  int64_t base_offset = -1;
  std::string error;
  std::string message;
  std::string owner;
};

/// The 200 answer's body: {"parts":[{"partition","base_offset"} |
/// {"partition","status","error","message"[,"owner"]}, ...]}, one entry per
/// part of the request, in its order.
std::string encode_forwarded_answers(const std::vector<forwarded_answer>& answers);

/// Decodes an answer for a request of parts for `partitions` (in order)
/// into `out`.
/// "" on success; else why the answer does not fit the request (not JSON,
/// another number of entries, an entry for another partition, a 200 entry
/// without a base offset), and `out` is empty.
std::string decode_forwarded_answers(std::string_view body, const std::vector<int32_t>& partitions,
                                     std::vector<forwarded_answer>& out);

}  // namespace moonmq::cluster
