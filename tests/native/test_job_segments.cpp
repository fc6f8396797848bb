// Jobs on NVL72 racks run in segments of whole trays (config/job_segments.h): the segment rule of NVIDIA's
// launcher, the field's checks, and the estimate on a segmented job equal to the same job on racks of that size.
#include <gtest/gtest.h>

#include <string>

#include "config/error.h"
#include "config/job_segments.h"
#include "engine/estimate.h"
#include "preset_files.h"
#include "test_util.h"
#include "training/sweep.h"

namespace {

const std::string kRoot = SC_SOURCE_DIR;

// Megatron-Bridge's rule, written out as its executors.py does: nodes of 4 GPUs, segment = nodes up to 18, else
// the largest divisor of nodes not above 18.
int LauncherSegment(int gpus) {
    const int nodes = gpus / 4;
    if (nodes <= 18) return nodes;
    for (int s = 18; s > 0; --s)
        if (nodes % s == 0) return s;
    return 1;
}

TEST(JobSegments, NvlRacksTakeTheLaunchersSegments) {
    const sc::System nvl = sctest::LoadSystemPreset("gb200-nvl72");
    ASSERT_EQ(nvl.levels.front().node_size, 4);
    for (int gpus = 4; gpus <= 576; gpus += 4) {
        SCOPED_TRACE(gpus);
        const std::optional<sc::System> part = sc::SegmentedPartFor(nvl, gpus);
        if (gpus <= 72 || gpus % 72 == 0) {
            EXPECT_FALSE(part);  // one rack, or whole racks: placed as they are
            continue;
        }
        ASSERT_TRUE(part);
        EXPECT_EQ(part->levels.front().size, 4 * LauncherSegment(gpus));
        for (size_t i = 1; i < part->levels.size(); ++i) {
            EXPECT_EQ(part->levels[i].size % part->levels[i - 1].size, 0);
            EXPECT_GE(part->levels[i].size, gpus);
        }
    }
    const std::optional<sc::System> p256 = sc::SegmentedPartFor(nvl, 256);
    ASSERT_TRUE(p256);
    EXPECT_EQ(p256->levels.front().size, 64);
    EXPECT_NE(p256->name.find("4 segments of 64"), std::string::npos) << p256->name;
    EXPECT_FALSE(sc::SegmentedPartFor(nvl, 130));    // not whole trays
    EXPECT_FALSE(sc::SegmentedPartFor(*p256, 256));  // segmented already
    // A system without node_size (one-node domains) is placed as it is.
    EXPECT_FALSE(sc::SegmentedPartFor(sctest::LoadSystemPreset("dgx-h100-superpod"), 100));
    // --gpus builds the same part (ExtendSystem), also past the preset's 576.
    EXPECT_EQ(sc::ExtendSystem(nvl, 256).levels.front().size, 64);
    EXPECT_EQ(sc::ExtendSystem(nvl, 1024).levels.front().size, 64);
}

TEST(JobSegments, NodeSizeIsChecked) {
    std::string text = sctest::ReadFile(kRoot + "/presets/systems/gb200-nvl72.json");
    const std::string acc = sctest::ReadFile(kRoot + "/presets/hardware/gb200.json");
    const auto error = [&](const std::string& from, const std::string& to) {
        std::string t = text;
        const size_t at = t.find(from);
        if (at == std::string::npos) return std::string("pattern not found: ") + from;
        t.replace(at, from.size(), to);
        try {
            sc::ParseSystem(t, acc);
        } catch (const sc::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const std::string node = "\"node_size\": {\n        \"value\": 4,";
    EXPECT_EQ(error(node, node), "");
    EXPECT_NE(error(node, "\"node_size\": {\n        \"value\": 5,").find("node_size"), std::string::npos);
    EXPECT_NE(error(node, "\"node_size\": {\n        \"value\": 0,").find("node_size"), std::string::npos);
}

// The estimate of a job on segmented racks is the estimate of the same job on racks cut to the segment, and with
// expert groups that fit a segment it is faster than on racks filled in order.
TEST(JobSegments, EstimateRunsOnTheSegments) {
    sc::ModelConfig m = sc::ParseModelConfig(sctest::ReadFile(kRoot + "/presets/models/qwen3-30b-a3b.json"));
    m.layers = 8;
    const sc::ParallelConfig par = sc::ParseParallelSpec("tp=1,pp=1,ep=32,dp=256,microbatch=1,batch=256");
    const sc::System nvl = sctest::LoadSystemPreset("gb200-nvl72");
    sc::System cut = nvl;
    cut.levels.front().size = 64;
    sc::engine::Request r;
    r.model = m;
    r.parallel = par;
    r.calibration = &sctest::MeasuredCalibration();
    r.system = &nvl;
    const sc::engine::EstimateResult seg = sc::engine::RunEstimate(r);
    r.system = &cut;
    const sc::engine::EstimateResult by_hand = sc::engine::RunEstimate(r);
    ASSERT_TRUE(seg.slice);
    EXPECT_EQ(seg.slice->levels.front().size, 64);
    EXPECT_DOUBLE_EQ(seg.training->step_seconds, by_hand.training->step_seconds);
    // Racks filled in order: groups 64-95, 128-159 and 192-223 of 32 cross a 72-GPU boundary.
    sc::System filled = nvl;
    filled.levels.front().node_size = 0;
    r.system = &filled;
    const sc::engine::EstimateResult in_order = sc::engine::RunEstimate(r);
    EXPECT_FALSE(in_order.slice);
    EXPECT_GT(in_order.training->step.ep_comm, 2 * seg.training->step.ep_comm);
}

}  // namespace
