// Trace reader (always) and the LD_PRELOAD recorder round trip (where libstrata_trace.so is built).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#if defined(STRATA_TRACE_HAVE_IO)
#include <zstd.h>

#include "trace_reader.hpp"
#if defined(STRATA_LAB_HAS_TRACE)
#include "trace_workload.hpp"
#endif

namespace {

using namespace strata::trace;

std::string temp_path(const std::string& name) {
    return testing::TempDir() + "strata_trace_" + std::to_string(::getpid()) + "_" + name;
}

/// Writes a trace file whose decompressed stream is `plain` (chunks, well-formed or not).
void write_plain(const std::string& path, const std::string& plain) {
    std::string packed(ZSTD_compressBound(plain.size()), '\0');
    packed.resize(ZSTD_compress(packed.data(), packed.size(), plain.data(), plain.size(), 3));
    file_header fh{};
    std::memcpy(fh.magic, file_magic, sizeof fh.magic);
    fh.version = format_version;
    fh.header_bytes = sizeof fh;
    fh.record_bytes = sizeof(record);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&fh), sizeof fh);
    out.write(packed.data(), static_cast<std::streamsize>(packed.size()));
}

/// Writes a trace file from chunks (each a list of records of one thread), as one zstd frame.
void write_trace(const std::string& path, const std::vector<std::vector<record>>& chunks) {
    std::string plain;
    for (const auto& c : chunks) {
        chunk_header h{};
        h.magic = chunk_magic;
        h.count = static_cast<std::uint32_t>(c.size());
        h.thread = c.front().thread;
        chunk_encoder enc;
        enc.begin(h, c.front());
        std::vector<std::uint8_t> payload(c.size() * max_encoded_record);
        std::uint8_t* end = payload.data();
        for (const record& r : c)
            end = enc.encode(end, r);
        h.payload_bytes = static_cast<std::uint32_t>(end - payload.data());
        plain.append(reinterpret_cast<const char*>(&h), sizeof h);
        plain.append(reinterpret_cast<const char*>(payload.data()), h.payload_bytes);
    }
    write_plain(path, plain);
}

record rec(std::uint64_t seq, op kind, std::uint64_t id, std::uint64_t size = 0, std::uint32_t thread = 1) {
    record r{};
    r.seq = seq;
    r.kind = static_cast<std::uint8_t>(kind);
    r.id = id;
    r.size = size;
    r.thread = thread;
    return r;
}

std::vector<record> read_all(const std::string& path, reader_stats* stats = nullptr) {
    trace_reader reader(path);
    std::vector<record> out;
    for (record r; reader.next(r);)
        out.push_back(r);
    if (stats != nullptr) *stats = reader.stats();
    EXPECT_TRUE(stats != nullptr || !reader.stats().truncated) << path << " is truncated";
    return out;
}

} // namespace

TEST(TraceFormat, EncodingRoundTripsRandomRecords) {
    std::uint64_t state = 12345;
    auto next = [&] { // splitmix64
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    for (int chunk = 0; chunk < 200; ++chunk) {
        std::vector<record> rs(1 + next() % 1024);
        std::uint64_t seq = next() >> (next() % 64), time = next() >> 8;
        for (record& r : rs) {
            r = record{};
            seq += next() % 4 == 0 ? next() >> (next() % 64 | 1) : 1; // mostly +1, sometimes a jump
            time += next() % 3 == 0 ? next() % 100000 : 0;
            r.seq = seq;
            r.time_ns = time;
            r.kind = static_cast<std::uint8_t>(1 + next() % 9);
            r.flags = next() % 10 == 0 ? flag_failed : 0;
            r.id = next() % 7 == 0 ? 0 : (next() % 2 ? next() : next() % 5000);
            r.old_id = r.kind == static_cast<std::uint8_t>(op::realloc) ? next() % 3000 : 0;
            r.size = r.kind == static_cast<std::uint8_t>(op::free)
                         ? 0
                         : (next() % 5 == 0 ? next() : next() % 4096);
            r.log2_align = next() % 4 == 0 ? static_cast<std::uint8_t>(next() % 40) : 0;
            r.thread = 7;
        }
        chunk_header h{};
        chunk_encoder enc;
        enc.begin(h, rs.front());
        std::vector<std::uint8_t> bytes(rs.size() * max_encoded_record);
        std::uint8_t* end = bytes.data();
        for (const record& r : rs) {
            std::uint8_t* before = end;
            end = enc.encode(end, r);
            ASSERT_LE(static_cast<std::size_t>(end - before), max_encoded_record);
        }
        chunk_encoder dec;
        dec.seq = h.first_seq;
        dec.time_ns = h.first_time_ns;
        const std::uint8_t* in = bytes.data();
        for (const record& want : rs) {
            record got;
            in = dec.decode(in, end, got);
            ASSERT_NE(in, nullptr);
            got.thread = 7;
            ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "seq " << want.seq;
        }
        EXPECT_EQ(in, end);
        // Any cut inside the last record is detected, never read past.
        record scratch;
        chunk_encoder again = dec;
        EXPECT_EQ(again.decode(end, end, scratch), nullptr);
    }
}

TEST(TraceReader, ReordersChunksBySequence) {
    const std::string path = temp_path("reorder.st");
    // Thread 2's chunk (seq 1, 3) reaches the file before thread 1's (seq 0, 2, 4).
    write_trace(path, {{rec(1, op::malloc, 2, 64, 2), rec(3, op::free, 2, 0, 2)},
                       {rec(0, op::malloc, 1, 32), rec(2, op::free, 1), rec(4, op::calloc, 3, 8)}});
    reader_stats stats;
    const auto records = read_all(path, &stats);
    ASSERT_EQ(records.size(), 5u);
    for (std::size_t i = 0; i < records.size(); ++i)
        EXPECT_EQ(records[i].seq, i);
    EXPECT_EQ(records[1].thread, 2u);
    EXPECT_EQ(stats.gaps, 0u);
    EXPECT_EQ(stats.chunks, 2u);
    std::remove(path.c_str());
}

/// Chunks of `per_chunk` records of `thread`, with numbers from `first` on (allocate, then free the
/// block just allocated), skipping `missing`.
std::vector<std::vector<record>> run_of(std::uint64_t first, std::uint64_t count, std::uint32_t thread,
                                        std::uint64_t missing = ~std::uint64_t{0}) {
    std::vector<std::vector<record>> chunks;
    std::vector<record> c;
    for (std::uint64_t seq = first; seq < first + count; ++seq) {
        if (seq == missing) continue;
        c.push_back(seq % 2 == 0 ? rec(seq, op::malloc, seq + 1, 48, thread)
                                 : rec(seq, op::free, seq, 0, thread));
        if (c.size() == max_chunk_records) chunks.push_back(std::move(c)), c.clear();
    }
    if (!c.empty()) chunks.push_back(std::move(c));
    return chunks;
}

TEST(TraceReader, TheFirstChunkInTheFileNeedNotHoldTheFirstRecord) {
    // A worker filled its buffer (and more) before the main thread's first records were swept:
    // 40,000 of thread 2's records, several hundred KB decoded, precede seq 0 and 1. The reader
    // took its start from the first chunk, returned the worker's records first and counted the
    // main thread's as out of order.
    const std::string path = temp_path("late_first.st");
    auto chunks = run_of(2, 40'000, 2);
    chunks.push_back({rec(0, op::malloc, 1, 100), rec(1, op::malloc, 2, 100)});
    write_trace(path, chunks);
    reader_stats stats;
    const auto records = read_all(path, &stats);
    ASSERT_EQ(records.size(), 40'002u);
    for (std::size_t i = 0; i < records.size(); ++i)
        ASSERT_EQ(records[i].seq, i);
    EXPECT_EQ(records[0].thread, 1u);
    EXPECT_EQ(stats.out_of_order, 0u);
    EXPECT_EQ(stats.gaps, 0u);
    std::remove(path.c_str());
}

TEST(TraceReader, ALostRecordDoesNotMakeTheWindowTheWholeFile) {
    // One number never comes. Once the stream is a look-ahead past it, it is lost, not late: the
    // reader goes on instead of holding every later record (it held up to 4M before giving up).
    const std::string path = temp_path("lost_one.st");
    write_trace(path, run_of(0, 600'000, 1, 1000));
    reader_stats stats;
    const auto records = read_all(path, &stats);
    ASSERT_EQ(records.size(), 599'999u);
    for (std::size_t i = 1; i < records.size(); ++i)
        ASSERT_LT(records[i - 1].seq, records[i].seq);
    EXPECT_EQ(stats.gaps, 1u);
    EXPECT_EQ(stats.out_of_order, 0u);
    EXPECT_LT(stats.max_window, 300'000u);
    std::remove(path.c_str());
}

TEST(TraceReader, AStreamWithNoFrameIsTruncated) {
    // The recorded process died before its first flush (_exit, SIGKILL): the header alone. A
    // recording always writes its first call, so this is a cut, not an empty program.
    const std::string path = temp_path("header_only.st");
    write_trace(path, {{rec(0, op::malloc, 1, 32)}});
    {
        std::ifstream in(path, std::ios::binary);
        std::string bytes(sizeof(file_header), '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    reader_stats stats;
    EXPECT_TRUE(read_all(path, &stats).empty());
    EXPECT_TRUE(stats.truncated);
    std::remove(path.c_str());
}

TEST(TraceReader, AnUnknownOpOrAlignmentIsACorruptRecord) {
    const std::string path = temp_path("bad_op.st");
    for (const std::uint8_t kind : {std::uint8_t{0}, std::uint8_t{10}, std::uint8_t{15}}) {
        record r = rec(0, op::malloc, 1, 32);
        r.kind = kind;
        write_trace(path, {{r}});
        EXPECT_THROW((void)read_all(path), std::runtime_error) << "op " << int{kind};
    }
    record r = rec(0, op::malloc, 1, 32);
    r.log2_align = 65;
    write_trace(path, {{r}});
    EXPECT_THROW((void)read_all(path), std::runtime_error);
    r.log2_align = 64; // the largest a size_t alignment can round up to: a recorded failure
    write_trace(path, {{r}});
    EXPECT_EQ(read_all(path).size(), 1u);
    std::remove(path.c_str());
}

TEST(TraceReader, CountsGaps) {
    const std::string path = temp_path("gaps.st");
    write_trace(path, {{rec(0, op::malloc, 1, 32), rec(3, op::free, 1)}});
    reader_stats stats;
    const auto records = read_all(path, &stats);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(stats.gaps, 2u);
    std::remove(path.c_str());
}

TEST(TraceReader, ARepeatedSequenceNumberIsOutOfOrderNotALoss) {
    const std::string path = temp_path("dup.st");
    write_trace(path, {{rec(0, op::malloc, 1, 32), rec(1, op::free, 1)}, {rec(1, op::malloc, 2, 8, 2)}});
    reader_stats stats;
    const auto records = read_all(path, &stats);
    EXPECT_EQ(records.size(), 3u);
    EXPECT_EQ(stats.gaps, 0u) << "it wrapped to 2^64 - 1 before";
    EXPECT_EQ(stats.out_of_order, 1u);
    std::remove(path.c_str());
}

TEST(TraceReader, ATraceStartingMidSequenceLostNothing) {
    // A fork child's trace goes on from its parent's sequence numbers.
    const std::string path = temp_path("child.st");
    write_trace(path, {{rec(1000, op::malloc, 1001, 32), rec(1001, op::free, 1001)}});
    reader_stats stats;
    const auto records = read_all(path, &stats);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(stats.gaps, 0u);
    std::remove(path.c_str());
}

TEST(TraceReader, AChunkOfImpossibleSizeIsRefusedAtOnce) {
    // A chunk header claiming 4 GiB of payload (or more records than a chunk holds) is corrupt:
    // the reader must not buffer what it claims.
    const std::string path = temp_path("bomb.st");
    for (const auto& [count, bytes] : {std::pair<std::uint32_t, std::uint32_t>{1, 0xffff'ff00u},
                                       std::pair<std::uint32_t, std::uint32_t>{max_chunk_records + 1, 100},
                                       std::pair<std::uint32_t, std::uint32_t>{0, 0}}) {
        chunk_header h{};
        h.magic = chunk_magic;
        h.count = count;
        h.thread = 1;
        h.payload_bytes = bytes;
        write_plain(path, std::string(reinterpret_cast<const char*>(&h), sizeof h));
        try {
            (void)read_all(path);
            ADD_FAILURE() << "accepted a chunk of " << count << " records, " << bytes << " bytes";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("impossible size"), std::string::npos) << e.what();
        }
    }
    std::remove(path.c_str());
}

TEST(TraceReader, BadFilesAreClearErrors) {
    EXPECT_THROW(trace_reader("/nonexistent/strata.st"), std::runtime_error);
    const std::string path = temp_path("garbage.st");
    {
        std::ofstream out(path, std::ios::binary);
        out << std::string(200, 'x');
    }
    try {
        trace_reader r(path);
        FAIL() << "garbage accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not a strata trace"), std::string::npos) << e.what();
    }
    // A valid header followed by a cut-off stream.
    write_trace(path, {{rec(0, op::malloc, 1, 32), rec(1, op::free, 1)}});
    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 10));
    }
    reader_stats stats;
    EXPECT_NO_THROW(read_all(path, &stats));
    EXPECT_TRUE(stats.truncated);
    // Garbage where the zstd stream should be.
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), sizeof(file_header));
        out << std::string(64, 'z');
    }
    EXPECT_THROW(read_all(path), std::runtime_error);
    std::remove(path.c_str());
}

#if defined(STRATA_LAB_HAS_TRACE)
// An op holds a 32-bit alignment: the lab replays requests aligned past 1 GiB at 1 GiB and says so.
TEST(TraceConversion, AlignmentsPastOneGiBAreCountedAndReplayedAtOneGiB) {
    const std::string path = temp_path("huge_align.st");
    record big = rec(0, op::aligned_alloc, 1, 32);
    big.log2_align = 40;
    record page = rec(1, op::aligned_alloc, 2, 32);
    page.log2_align = 12;
    write_trace(path, {{big, page}});
    strata::lab::trace_conversion conv;
    const strata::lab::op_workload w = strata::lab::load_trace(path, UINT64_MAX, &conv);
    ASSERT_EQ(w.ops.size(), 2u);
    EXPECT_EQ(conv.clamped_alignments, 1u);
    EXPECT_EQ(w.ops[0].log2_align, 30u);
    EXPECT_EQ(w.ops[1].log2_align, 12u);
    std::remove(path.c_str());
}
#endif

#if defined(STRATA_TRACE_LIB)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

/// Runs the victim in `mode` under the recorder writing to `out`. Returns: its exit status.
int run_victim(const std::string& mode, const std::string& out) {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0 && std::strncmp(*e, "STRATA_TRACE_OUT=", 17) != 0)
            env_storage.emplace_back(*e);
    env_storage.push_back(std::string("LD_PRELOAD=") + STRATA_TRACE_LIB);
    env_storage.push_back("STRATA_TRACE_OUT=" + out);
    std::vector<char*> envp;
    for (auto& s : env_storage)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = STRATA_TRACE_VICTIM;
    std::vector<char*> argv{exe.data(), const_cast<char*>(mode.c_str()), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Checks what every trace must satisfy: dense sequence, frees and reallocs name live blocks, no
/// id allocated twice. Returns: the records.
std::vector<record> read_consistent(const std::string& path, const std::set<std::uint64_t>& inherited = {}) {
    reader_stats stats;
    auto records = read_all(path, &stats);
    EXPECT_EQ(stats.gaps, 0u) << path;
    std::set<std::uint64_t> live(inherited), seen(inherited);
    for (const record& r : records) {
        const auto kind = static_cast<op>(r.kind);
        if (kind == op::free) {
            EXPECT_EQ(live.erase(r.id), 1u) << "free of a block that is not live, seq " << r.seq;
            continue;
        }
        if (kind == op::realloc && r.old_id != 0 && (r.flags & flag_failed) == 0) {
            EXPECT_EQ(live.erase(r.old_id), 1u) << "realloc of a block that is not live, seq " << r.seq;
        }
        if (r.id != 0) {
            EXPECT_TRUE(seen.insert(r.id).second) << "id reused, seq " << r.seq;
            live.insert(r.id);
        }
    }
    return records;
}

std::vector<record> with_size(const std::vector<record>& rs, std::uint64_t size) {
    std::vector<record> out;
    for (const auto& r : rs)
        if (r.size == size) out.push_back(r);
    return out;
}

/// Returns: the free of block `id` in rs, or nullptr. (Indexed once per trace: the threaded test
/// looks up ~11,000 frees.)
const record* find_free(const std::vector<record>& rs, std::uint64_t id) {
    static const std::vector<record>* indexed = nullptr;
    static std::size_t indexed_size = 0;
    static std::map<std::uint64_t, const record*> frees;
    if (indexed != &rs || indexed_size != rs.size()) {
        frees.clear();
        for (const auto& r : rs)
            if (static_cast<op>(r.kind) == op::free) frees[r.id] = &r;
        indexed = &rs;
        indexed_size = rs.size();
    }
    const auto it = frees.find(id);
    return it == frees.end() ? nullptr : it->second;
}

} // namespace

TEST(TraceRecorder, RecordsEveryEntryPoint) {
    const std::string out = temp_path("basic.st");
    std::remove(out.c_str());
    ASSERT_EQ(run_victim("basic", out), 0);
    const auto rs = read_consistent(out);
    struct expect {
        std::uint64_t size;
        op kind;
        unsigned log2_align;
    };
    const expect calls[] = {{100001, op::malloc, 0},          {100020, op::calloc, 0},
                            {100003, op::realloc, 0},         {100032, op::aligned_alloc, 6},
                            {100005, op::posix_memalign, 12}, {100006, op::memalign, 5},
                            {100007, op::valloc, 12},         {100008, op::realloc, 0}};
    std::map<std::uint64_t, record> by_size;
    for (const expect& e : calls) {
        const auto m = with_size(rs, e.size);
        ASSERT_EQ(m.size(), 1u) << "size " << e.size;
        EXPECT_EQ(static_cast<op>(m[0].kind), e.kind) << "size " << e.size;
        EXPECT_EQ(m[0].log2_align, e.log2_align) << "size " << e.size;
        EXPECT_NE(m[0].id, 0u);
        by_size[e.size] = m[0];
    }
    EXPECT_EQ(by_size[100003].old_id, by_size[100001].id); // realloc(a) names a's id
    EXPECT_EQ(by_size[100008].old_id, 0u);                 // realloc(nullptr, n)
    // Program order on one thread: each call's seq follows the previous one's.
    for (std::size_t i = 1; i < std::size(calls); ++i)
        EXPECT_LT(by_size[calls[i - 1].size].seq, by_size[calls[i].size].seq);
    // Every block but the one realloc consumed is freed, after its allocation, on the same thread.
    for (const expect& e : calls) {
        if (e.size == 100001) continue;
        const record* f = find_free(rs, by_size[e.size].id);
        ASSERT_NE(f, nullptr) << "size " << e.size;
        EXPECT_GT(f->seq, by_size[e.size].seq);
        EXPECT_EQ(f->thread, by_size[e.size].thread);
    }
    EXPECT_EQ(find_free(rs, by_size[100001].id), nullptr);
    std::remove(out.c_str());
}

TEST(TraceRecorder, ThreadsKeepPerThreadOrderAndCrossThreadFrees) {
    const std::string out = temp_path("threads.st");
    std::remove(out.c_str());
    ASSERT_EQ(run_victim("threads", out), 0);
    const auto rs = read_consistent(out);
    std::set<std::uint32_t> workers;
    for (std::uint64_t t = 0; t < 4; ++t) {
        const auto allocs = with_size(rs, 100100 + t);
        ASSERT_EQ(allocs.size(), 2000u);
        for (const auto& a : allocs) {
            const record* f = find_free(rs, a.id);
            ASSERT_NE(f, nullptr);
            EXPECT_EQ(f->thread, a.thread);
        }
        workers.insert(allocs[0].thread);
    }
    EXPECT_EQ(workers.size(), 4u);
    const auto produced = with_size(rs, 100200);
    ASSERT_EQ(produced.size(), 3000u);
    std::size_t cross = 0;
    for (const auto& a : produced) {
        const record* f = find_free(rs, a.id);
        ASSERT_NE(f, nullptr);
        EXPECT_GT(f->seq, a.seq);
        cross += f->thread != a.thread;
    }
    EXPECT_EQ(cross, 3000u);
    std::remove(out.c_str());
}

TEST(TraceRecorder, ForkChildWritesItsOwnFile) {
    const std::string out = temp_path("fork.st");
    std::remove(out.c_str());
    ASSERT_EQ(run_victim("fork", out), 0);
    const auto parent = read_consistent(out);
    const auto shared = with_size(parent, 100666);
    ASSERT_EQ(shared.size(), 1u);
    EXPECT_NE(find_free(parent, shared[0].id), nullptr);
    EXPECT_TRUE(with_size(parent, 100777).empty());
    // The child claimed OUT.<pid>: find it.
    std::string child_path;
    const std::string prefix = out + ".";
    FILE* ls = popen(("ls " + prefix + "* 2>/dev/null").c_str(), "r");
    ASSERT_NE(ls, nullptr);
    char line[4096];
    if (std::fgets(line, sizeof line, ls) != nullptr) {
        child_path = line;
        child_path.erase(child_path.find_last_not_of('\n') + 1);
    }
    pclose(ls);
    ASSERT_FALSE(child_path.empty()) << "no child trace next to " << out;
    // The child's file continues the parent's ids (and sequence numbers: nothing is lost at its
    // start): the inherited block is freed there too.
    reader_stats child_stats;
    const auto child = read_all(child_path, &child_stats);
    EXPECT_EQ(child_stats.gaps, 0u);
    ASSERT_EQ(with_size(child, 100777).size(), 1u);
    EXPECT_NE(find_free(child, shared[0].id), nullptr);
    std::remove(child_path.c_str());
    std::remove(out.c_str());
}

TEST(TraceRecorder, ExecCompletesTheStream) {
    const std::string out = temp_path("exec.st");
    std::remove(out.c_str());
    ASSERT_EQ(run_victim("exec", out), 0);
    const auto before = read_consistent(out);
    EXPECT_EQ(with_size(before, 100555).size(), 1u);
    // The exec'd image (same pid) recorded "basic" into OUT.<pid>.
    std::string next;
    FILE* ls = popen(("ls " + out + ".* 2>/dev/null").c_str(), "r");
    ASSERT_NE(ls, nullptr);
    char line[4096];
    if (std::fgets(line, sizeof line, ls) != nullptr) {
        next = line;
        next.erase(next.find_last_not_of('\n') + 1);
    }
    pclose(ls);
    ASSERT_FALSE(next.empty());
    const auto after = read_consistent(next);
    EXPECT_EQ(with_size(after, 100001).size(), 1u);
    std::remove(next.c_str());
    std::remove(out.c_str());
}
#endif // STRATA_TRACE_LIB

#else
TEST(TraceReader, NotBuilt) {
    GTEST_SKIP() << "strata_trace_io is not part of this build (libzstd-dev missing)";
}
#endif // STRATA_TRACE_HAVE_IO
