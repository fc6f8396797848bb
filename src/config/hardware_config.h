// Accelerators and the systems built from them: what presets/hardware/*.json and presets/systems/*.json
// describe (conventions and sources in presets/README.md).
//
// Units, everywhere in this header:
//   compute      TFLOPS, dense (no 2:4 sparsity), per accelerator
//   memory       capacity in GiB (2^30 bytes) or marketing GB (1e9 bytes) as named; bandwidth in TB/s (1e12 B/s)
//   network      GB/s (1e9 bytes/s) PER DIRECTION per accelerator; NIC rates in Gb/s (bits) as vendors quote them
//   latency      microseconds
// Every number in a preset carries value/unit/status/sources; the parsed structs keep the status and sources
// per field in `provenance` (keyed by the JSON path, e.g. "matrix_tflops.bf16", "levels[1].efficiency").
//
// Parsing is strict: unknown keys are errors (with a "did you mean" hint), missing or mistyped fields,
// non-positive bandwidths, efficiencies outside (0, 1], level sizes that do not grow or do not divide the
// next level, ... throw sc::Error naming the field and the offending value.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/precision.h"

namespace sc {

// Where one number came from. status is one of VERIFIED, DERIVED, SECONDARY_UNVERIFIED, UNVERIFIED, ASSUMED,
// NOT_SUPPORTED_OR_NOT_PUBLISHED (the last only with a null value); see data/accelerators.md.
struct Provenance {
    std::string status;
    std::vector<std::string> sources;
    std::string note;
    std::string from;  // path inside data/accelerators.json the value was copied from, if any
};

// Dense peak throughput of the matrix units (tensor cores, MFMA, MME, MXU). nullopt: not supported or not
// published. fp32 here is a true FP32-input matrix path (AMD, Gaudi); NVIDIA has none (its FP32-input tensor
// path is tf32) and its FP32 rate is in VectorTflops.
struct MatrixTflops {
    std::optional<double> fp32, tf32, bf16, fp16, fp8, fp4;
};

// Non-matrix (SIMT / vector unit) throughput, as published.
struct VectorTflops {
    std::optional<double> fp32, bf16;
};

struct Accelerator {
    std::string id;    // preset id, e.g. "h100-sxm"
    std::string name;  // "NVIDIA H100-SXM5-80GB"
    std::string vendor;
    std::string form_factor;
    MatrixTflops matrix;
    VectorTflops vector;
    double hbm_capacity_gb_marketing = 0;  // decimal GB as marketed
    double hbm_capacity_gib_usable = 0;    // GiB that software sees
    bool capacity_uses_marketing = false;  // preset's "capacity_used"; false = hbm_capacity_GiB_usable
    double hbm_bandwidth_tbps = 0;
    std::string scale_up_technology;
    double scale_up_gbps_per_direction = 0;  // GB/s per accelerator per direction into its scale-up fabric
    int scale_up_domain = 0;                 // accelerators in one scale-up domain
    double nic_gbit_per_gpu = 0;             // scale-out NIC Gb/s per accelerator
    std::optional<double> board_power_w;     // the power its datasheet peaks are rated at
    // A power limit set below the board power (`nvidia-smi -pl`, a facility's cap, Meta's 500 W Grand Teton H100s):
    // the SMs run at a lower clock, and compute with them (training/power_cap.h). Unset: the board power. Within
    // [kMinPowerLimitFraction x board_power_w, board_power_w]; needs a board power.
    std::optional<double> power_limit_w;
    // Streaming multiprocessors (NVIDIA) the kernels of one GPU share; 0 = not published in the preset. Needed
    // where communication kernels take SMs from overlapped compute (training/comm_sms.h).
    int sm_count = 0;
    // Thread blocks an NCCL collective runs on: one per channel, each resident on an SM for the whole collective
    // (Hu et al. 2025, "Demystifying NCCL", arXiv 2507.04786). 0 = no measurement in the preset. The compute an
    // overlapped data-parallel collective hides behind runs on the other SMs meanwhile (training/comm_sms.h).
    int collective_ctas = 0;
    std::map<std::string, Provenance> provenance;
    // The peaks and HBM bandwidth as the preset gave them. Measured calibration curves (config/calibration.h)
    // describe that part; after an edit (--system-set, the page, a link) they answer for the edited part
    // scaled by edited / preset (CalibrationScale below), as the co-design sweep scales them: a faster part
    // reaches the same fraction of its peak. Unset (0, empty) in an accelerator built by hand: scale 1.
    MatrixTflops preset_matrix;
    double preset_hbm_bandwidth_tbps = 0;

    // Memory capacity the memory model must fit into, in bytes: usable GiB * 2^30 (or marketing GB * 1e9
    // when the preset says "capacity_used": "hbm_capacity_GB_marketing").
    double MemoryBytes() const;
    // Scale-out NIC rate per direction in GB/s (Gb/s / 8).
    double NicGBps() const { return nic_gbit_per_gpu / 8.0; }
};

// scale_up: one NVLink/xGMI domain. two_tier / rail_optimized: a leaf-spine fat tree of NICs (one pod).
// three_tier: a core tier joining pods (NVIDIA's SuperPOD RA adds one beyond 4 SUs); its oversubscription
// is the core's taper. fullflat: one flat fabric at scale-up bandwidth. torus: one dimension of a direct
// chip-to-chip torus or mesh (TPU ICI): each accelerator links to its two neighbours along it; a TPU v4 pod
// is three torus levels (x, then x*y, then x*y*z chips). No switch: no in-network reduction, and the
// bandwidth a group sees depends on where its members sit (training/comm_model.h).
enum class LevelKind { scale_up, two_tier, fullflat, rail_optimized, three_tier, torus };
const char* NameOf(LevelKind k);
inline bool IsFatTree(LevelKind k) {
    return k == LevelKind::two_tier || k == LevelKind::rail_optimized || k == LevelKind::three_tier;
}

// One level of the network hierarchy. Level i connects `size` accelerators; level i+1 groups whole
// level-i groups. Bandwidth is per accelerator per direction, nominal (line rate); `efficiency` is the
// measured fraction of it that ring collectives reach (busbw / nominal at the plateau).
struct NetworkLevel {
    std::string name;
    LevelKind kind = LevelKind::scale_up;
    int size = 0;                       // accelerators reachable within this level
    double bandwidth_gbps = 0;          // GB/s per accelerator per direction
    double latency_us = 0;              // per hop / ring step
    double efficiency = 1;              // (0, 1]
    bool in_network_reduction = false;  // NVLink SHARP, InfiniBand SHARP, ...
    // Torus levels only: whether the dimension closes into a ring (a torus; TPU slices of whole 4x4x4 cubes
    // through the optical switches) or stays a line (a mesh). Bandwidth of a torus level is per accelerator per
    // direction over both of its links in the dimension (2 x one link's rate): what a bidirectional ring gets.
    bool wraparound = false;
    double oversubscription = 1;  // >= 1; only fat-tree levels (two_tier, rail_optimized, three_tier) set it
    // Scale-up levels spanning several nodes only (GB200/GB300 NVL72: a compute tray's 4 GPUs): accelerators per
    // node, what a scheduler allocates; a job is placed in equal segments of whole nodes per domain
    // (config/job_segments.h). 0: the domain is one node.
    int node_size = 0;
    std::map<std::string, Provenance> provenance;  // keys relative to the level ("efficiency", ...)
    // EffectiveGBps() as the preset gave it: the scale-up level's measured collective curves are scaled by
    // EffectiveGBps() / this after an edit (CalibrationScale). 0 in a level built by hand: scale 1.
    double preset_effective_gbps = 0;

    // bandwidth * efficiency / oversubscription: what a ring collective should see per direction.
    double EffectiveGBps() const { return bandwidth_gbps * efficiency / oversubscription; }
};

struct System {
    std::string id;
    std::string name;
    std::string description;
    std::vector<std::string> sources;
    Accelerator accelerator;
    std::vector<NetworkLevel> levels;  // innermost first; sizes strictly increasing, each dividing the next

    int TotalAccelerators() const { return levels.empty() ? 0 : levels.back().size; }
    // One scale-up domain and nothing beyond it (a DGX GH200's NVLink fabric, a PCIe server): no network is
    // described past its size, so it is not grown (ExtendSystem), and only independent serving replicas may take
    // several copies of it (engine::ServingCluster).
    bool IsOneDomain() const { return levels.size() == 1 && levels[0].kind == LevelKind::scale_up; }
    // Index of the innermost level whose size is >= `span` accelerators (a group of `span` consecutive
    // accelerators talks over that level). Throws when span < 1 or span > TotalAccelerators().
    int LevelForSpan(int span) const;
};

// JSON text of presets/hardware/<id>.json -> Accelerator.
Accelerator ParseAccelerator(std::string_view json_text);
// JSON text of presets/systems/<id>.json plus the JSON text of the accelerator preset it names.
// The accelerator's id must equal the system's "accelerator" field.
System ParseSystem(std::string_view system_json, std::string_view accelerator_json);
// Same, with an accelerator parsed already.
System ParseSystem(std::string_view system_json, const Accelerator& accelerator);

// Checks the hierarchy: level sizes grow, each divides the next, the scale-up level is first and within the
// accelerator's domain, torus levels come first (the chips' own links) and together stay within the
// accelerator's scale-up domain. Throws sc::Error naming levels[i].size (or .kind).
void ValidateSystemHierarchy(const System& sys);

// The slowest rates a part or a level may be given (presets, --system-set, the page, links). A what-if may go far
// below any real part, but not to where a step's time leaves double's range: at 1e-300 TFLOPS a step took
// 1e300 s, and at 1e-320 its time overflowed and the MFU came out NaN.
constexpr double kMinTflops = 1e-3;           // 1 GFLOP/s, matrix or vector, any precision
constexpr double kMinHbmTbps = 1e-3;          // 1 GB/s
constexpr double kMinLevelGbps = 1e-3;        // 1 MB/s per direction
constexpr double kMinLevelEfficiency = 0.01;  // measured busbw / nominal
// The lowest power limit, as a fraction of the board power: NVIDIA's DGX power-capping interface allows an H100
// 200 W of its 700 W (DGX B200/H100 User Guide, "Managing Power Capping", Redfish PowerLimitWatts: AllowableMin 200,
// AllowableMax 700). Below it no part is documented to run, and the clock law of training/power_cap.h was not meant
// for it.
constexpr double kMinPowerLimitFraction = 200.0 / 700.0;

// Every peak the accelerator has at least kMinTflops and its HBM at least kMinHbmTbps, and a power limit within
// [kMinPowerLimitFraction, 1] of a board power it has; sc::Error names the field.
void ValidateAcceleratorRates(const Accelerator& a);
// A power limit of `watts` on `a`: within [kMinPowerLimitFraction, 1] of its board power, which it must have.
// sc::Error names `field` (accelerator.power_limit_w; a link's power_limit).
void ValidatePowerLimit(const Accelerator& a, double watts, const std::string& field);

// Re-checks a system edited in place (the page's cluster panel): the accelerator's rates (above), every level's
// bandwidth at least kMinLevelGbps, latency not negative, efficiency in [kMinLevelEfficiency, 1], no in-network
// reduction on a torus (it has no switch), the torus levels' bandwidths within the chip's own links.
// Throws sc::Error naming the level and field.
void ValidateSystemLevels(const System& sys);

// Dense matrix peak of `acc` at `p`, in FLOP/s (not TFLOPS). fp32 falls back to the vector FP32 rate when
// there is no FP32 matrix path (NVIDIA). Throws sc::Error("precision", "fp4 is not supported by ...")
// when the accelerator has no published rate for `p`.
double PeakFlops(const Accelerator& acc, Precision p);
// Same, in TFLOPS.
double PeakTflops(const Accelerator& acc, Precision p);

// Factor on what the preset's calibration measured, for an edited part: edited / preset value of the matrix
// peak at `p`, of the HBM bandwidth, or of a level's effective bandwidth; 1 when not edited or unknown.
double CalibrationScale(const Accelerator& acc, Precision p);
double HbmCalibrationScale(const Accelerator& acc);
double CalibrationScale(const NetworkLevel& level);

}  // namespace sc
