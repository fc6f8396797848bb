// The number formatters every report and panel share (report/format.h): exact strings at each unit boundary,
// since the CLI's output bytes and the page's mirror depend on them.
#include <gtest/gtest.h>

#include "report/format.h"

TEST(Format, SecondsInEachStyle) {
    EXPECT_EQ(sc::FormatSeconds(12.3456), "12.346 s");
    EXPECT_EQ(sc::FormatSeconds(1), "1.000 s");
    EXPECT_EQ(sc::FormatSeconds(0.0123456), "12.346 ms");
    EXPECT_EQ(sc::FormatSeconds(1e-3), "1.000 ms");
    EXPECT_EQ(sc::FormatSeconds(5e-6), "5.000 us");
    EXPECT_EQ(sc::FormatSeconds(0), "0.000 us");
    EXPECT_EQ(sc::FormatSeconds(1.23456, sc::kTableTime), "1.235 s");
    EXPECT_EQ(sc::FormatSeconds(0.0123456, sc::kTableTime), "12.35 ms");
    EXPECT_EQ(sc::FormatSeconds(5e-6, sc::kTableTime), "0.01 ms");  // the tables never switch to us
    EXPECT_EQ(sc::FormatSeconds(1.23456, sc::kPanelTime), "1.23 s");
    EXPECT_EQ(sc::FormatSeconds(0.0123456, sc::kPanelTime), "12.3 ms");
}

TEST(Format, BytesFlopsAndCounts) {
    EXPECT_EQ(sc::FormatBytes(1023), "1023.00 B");
    EXPECT_EQ(sc::FormatBytes(1024), "1.00 KiB");
    EXPECT_EQ(sc::FormatBytes(80.0 * (1 << 30)), "80.00 GiB");
    EXPECT_EQ(sc::FormatFlops(1.0736e12), "1.074 TFLOP");
    EXPECT_EQ(sc::FormatFlops(999), "999.000 FLOP");
    EXPECT_EQ(sc::FormatCount(8.03e9), "8.03 B");
    EXPECT_EQ(sc::FormatInt(174604259328.0), "174604259328");
}

// Energy in the unit a reader compares: a one-node step in Wh (it printed 0.00 kWh), a long run in kWh or MWh.
TEST(Format, EnergyInWhKWhOrMWh) {
    EXPECT_EQ(sc::FormatEnergy(3412.96), "0.948 Wh");
    EXPECT_EQ(sc::FormatEnergy(3600 * 999.0), "999 Wh");
    EXPECT_EQ(sc::FormatEnergy(3600 * 5000.0), "5 kWh");
    EXPECT_EQ(sc::FormatEnergy(3.6e9 * 2.5), "2.5 MWh");
}
