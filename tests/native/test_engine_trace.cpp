// The engine's trace path (src/engine/trace.h), which `stagecraft trace` and the page's download both take:
// compute nodes are timed exactly when the request has a cluster, the snapshot does not see later edits of
// what it was taken from, and a timeline names what it lacks.
#include <gtest/gtest.h>

#include <string>

#include "engine/trace.h"
#include "test_util.h"
#include "trace/byte_sink.h"
#include "trace/chakra_et.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

sc::engine::Request Llama(const sc::System* system) {
    sc::engine::Request r;
    r.model = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/llama3-8b.json"));
    r.model.layers = 4;
    r.parallel = sc::ParseParallelSpec("tp=2,pp=2,dp=2,sp=1,batch=8");
    r.system = system;
    return r;
}

sc::System H100() {
    return sc::ParseSystem(sctest::ReadFile(kRoot + "/presets/systems/dgx-h100-superpod.json"),
                           sctest::ReadFile(kRoot + "/presets/hardware/h100-sxm.json"));
}

std::string Rank(const sc::engine::TraceSnapshot& snap, int rank) {
    auto writer = sc::engine::MakeTraceWriter(snap);
    sc::StringSink sink;
    writer->WriteRank(rank, sink);
    return sink.bytes;
}

// {compute nodes, of which with a duration}
std::pair<int, int> ComputeNodes(const std::string& file) {
    std::pair<int, int> n{0, 0};
    sc::EtReader reader(file);
    sc::EtNode node;
    while (reader.Next(&node))
        if (node.type == sc::EtNodeType::comp) ++n.first, n.second += node.duration_micros > 0 ? 1 : 0;
    return n;
}

TEST(EngineTrace, ComputeNodesAreTimedExactlyWhenTheRequestHasACluster) {
    const sc::System h100 = H100();
    const auto untimed = ComputeNodes(Rank(sc::engine::SnapshotTrace(Llama(nullptr)), 0));
    const auto timed = ComputeNodes(Rank(sc::engine::SnapshotTrace(Llama(&h100)), 0));
    ASSERT_GT(untimed.first, 0);
    EXPECT_EQ(untimed.second, 0);
    EXPECT_EQ(timed.first, untimed.first);
    EXPECT_EQ(timed.second, timed.first);  // every one, at least 1 us
}

TEST(EngineTrace, TheSnapshotDoesNotSeeLaterEditsOfTheCluster) {
    sc::System h100 = H100();
    const sc::engine::TraceSnapshot snap = sc::engine::SnapshotTrace(Llama(&h100));
    const std::string before = Rank(snap, 1);
    h100.accelerator.hbm_bandwidth_tbps /= 10;  // memory-bound compute nodes take longer
    EXPECT_EQ(Rank(snap, 1), before);
    // The edit matters: a snapshot taken after it writes other durations, so the check above could fail.
    const sc::engine::TraceSnapshot slower = sc::engine::SnapshotTrace(Llama(&h100));
    EXPECT_NE(Rank(slower, 1), before);
}

TEST(EngineTrace, ATimelineNeedsAClusterAndARankOfTheJob) {
    const sc::System h100 = H100();
    const sc::engine::TraceSnapshot untimed = sc::engine::SnapshotTrace(Llama(nullptr));
    auto writer = sc::engine::MakeTraceWriter(untimed);
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::RunRankTimeline(untimed, *writer, 0); }),
              "system: a timeline needs a cluster to time the ops; none was given");
    const sc::engine::TraceSnapshot timed = sc::engine::SnapshotTrace(Llama(&h100));
    auto timed_writer = sc::engine::MakeTraceWriter(timed);
    EXPECT_EQ(sctest::ErrorOf([&] { sc::engine::RunRankTimeline(timed, *timed_writer, 8); }),
              "rank: rank 8 is outside 0..7");
    const sc::engine::RankTimeline tl = sc::engine::RunRankTimeline(timed, *timed_writer, 7);
    ASSERT_EQ(tl.nodes.size(), tl.program->nodes.size());
    EXPECT_GT(tl.end_us, 0);
    EXPECT_GT(tl.idle_fraction, 0);  // the last stage waits for the first forward to reach it
    EXPECT_LT(tl.idle_fraction, 1);
}

}  // namespace
