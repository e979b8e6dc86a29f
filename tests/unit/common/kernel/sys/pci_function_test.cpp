// The PCI function behind a device: its link speed and width, its AER
// counts, a virtual function's link from its physical function, and the
// parsers of their files.

#include <gtest/gtest.h>

#include <filesystem>

#include "common/kernel/sys/reader.hpp"
#include "tests/support/sysfs_files.hpp"

namespace rdma_exporter::sysfs {
namespace {

namespace fs = std::filesystem;

TEST(PcieSpeed, EveryGenerationAsTheKernelPrintsIt) {
  EXPECT_EQ(parse_pcie_speed("2.5 GT/s PCIe"), 2.5e9);
  EXPECT_EQ(parse_pcie_speed("5.0 GT/s PCIe"), 5e9);
  EXPECT_EQ(parse_pcie_speed("16.0 GT/s PCIe"), 16e9);
  EXPECT_EQ(parse_pcie_speed("64.0 GT/s PCIe"), 64e9);
  // Before Linux 5.x: no "PCIe", and whole numbers without ".0".
  EXPECT_EQ(parse_pcie_speed("8 GT/s"), 8e9);
  EXPECT_EQ(parse_pcie_speed("2.5 GT/s"), 2.5e9);
}

TEST(PcieSpeed, UnknownAndMalformedAreNoSpeed) {
  for (const char* text : {"Unknown", "Unknown speed", "", "GT/s", "16.0", "16.0 Gb/s",
                           "16.0 GT/s PCIe x16", "-8.0 GT/s PCIe", "0 GT/s PCIe", "16.0GT/s"}) {
    EXPECT_EQ(parse_pcie_speed(text), std::nullopt) << text;
  }
}

TEST(AerCounts, CurrentNamesAndTheMessagesTotal) {
  auto counts = parse_aer_counts("RxErr 3\nBadTLP 0\nBadDLLP 17\nTOTAL_ERR_COR 12");
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->errors.size(), 3U);
  EXPECT_EQ(counts->errors[0].name, "RxErr");
  EXPECT_EQ(counts->errors[0].value, 3U);
  EXPECT_EQ(counts->errors[1].name, "BadTLP");
  EXPECT_EQ(counts->errors[1].value, 0U);
  EXPECT_EQ(counts->errors[2].name, "BadDLLP");
  EXPECT_EQ(counts->errors[2].value, 17U);
  EXPECT_EQ(counts->messages, 12U);
}

// Linux 4.19 to 5.0 spelled the errors out, with blanks in the names.
TEST(AerCounts, NamesWithBlanksFromOlderKernels) {
  auto counts = parse_aer_counts(
      "Receiver Error 2\nRELAY_NUM Rollover 5\nCompletion Timeout 18446744073709551615\n"
      "TOTAL_ERR_NONFATAL 7\n");
  ASSERT_TRUE(counts);
  ASSERT_EQ(counts->errors.size(), 3U);
  EXPECT_EQ(counts->errors[0].name, "Receiver Error");
  EXPECT_EQ(counts->errors[0].value, 2U);
  EXPECT_EQ(counts->errors[1].name, "RELAY_NUM Rollover");
  EXPECT_EQ(counts->errors[1].value, 5U);
  EXPECT_EQ(counts->errors[2].name, "Completion Timeout");
  EXPECT_EQ(counts->errors[2].value, 18446744073709551615U);
  EXPECT_EQ(counts->messages, 7U);
}

TEST(AerCounts, AFileWithoutTotalHasNoMessages) {
  auto counts = parse_aer_counts("");
  ASSERT_TRUE(counts);
  EXPECT_TRUE(counts->errors.empty());
  EXPECT_EQ(counts->messages, std::nullopt);
}

TEST(AerCounts, AMalformedLineFailsTheFileAndIsQuoted) {
  for (const char* text : {"DLP\n", "RxErr x\n", "RxErr -1\n", "RxErr 18446744073709551616\n",
                           " 4\n", "RxErr 4 \n", "RxErr 4\nBadTLP\n"}) {
    auto counts = parse_aer_counts(text);
    ASSERT_FALSE(counts) << text;
    EXPECT_NE(counts.error().message.find("not \"<error> <count>\""), std::string::npos);
  }
  EXPECT_EQ(parse_aer_counts("RxErr 4\nBadTLP\n").error().message,
            "not \"<error> <count>\": \"BadTLP\"");
}

// A physical function with every file of its own value; a virtual function
// of it, whose link is the physical function's and whose AER is its own.
class PciFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    function("0000:3b:00.0", "pci");
    sys.file(pf + "current_link_speed", "8.0 GT/s PCIe\n");
    sys.file(pf + "max_link_speed", "16.0 GT/s PCIe\n");
    sys.file(pf + "current_link_width", "4\n");
    sys.file(pf + "max_link_width", "16\n");
    sys.file(pf + "aer_dev_correctable", "RxErr 11\nBadTLP 12\nTOTAL_ERR_COR 13\n");
    sys.file(pf + "aer_dev_nonfatal", "DLP 21\nTOTAL_ERR_NONFATAL 22\n");
    sys.file(pf + "aer_dev_fatal", "SDES 31\nTOTAL_ERR_FATAL 32\n");
    device("mlx5_0", "0000:3b:00.0");

    function("0000:3b:00.2", "pci");
    sys.file(vf + "current_link_speed", "Unknown\n");  // a VF has no link
    sys.file(vf + "current_link_width", "0\n");
    sys.file(vf + "aer_dev_correctable", "RxErr 41\nTOTAL_ERR_COR 42\n");
    fs::create_symlink("../0000:3b:00.0", sys.root() / vf / "physfn");
    device("mlx5_2", "0000:3b:00.2");
  }

  void function(const std::string& address, const std::string& bus) {
    fs::create_directories(sys.root() / "devices" / "pci0000:00" / address);
    fs::create_directories(sys.root() / "bus" / bus);
    fs::create_symlink("../../../bus/" + bus,
                       sys.root() / "devices" / "pci0000:00" / address / "subsystem");
  }
  void device(const std::string& name, const std::string& address) {
    fs::create_directories(sys.root() / "class" / "infiniband" / name);
    fs::create_symlink("../../../devices/pci0000:00/" + address,
                       sys.root() / "class" / "infiniband" / name / "device");
  }

  testing::SysfsFiles sys;
  const std::string pf = "devices/pci0000:00/0000:3b:00.0/";
  const std::string vf = "devices/pci0000:00/0000:3b:00.2/";
};

TEST_F(PciFunctionTest, EveryValueComesFromItsOwnFile) {
  Reader reader(sys.root());
  ReadNotes notes;
  auto f = reader.read_pci_function("mlx5_0", notes);
  ASSERT_TRUE(f);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_EQ(notes.unavailable, 0U);
  EXPECT_EQ(f->address, "0000:3b:00.0");
  EXPECT_EQ(f->physical_function, "");
  EXPECT_EQ(f->link.speed_transfers_per_second, 8e9);
  EXPECT_EQ(f->link.max_speed_transfers_per_second, 16e9);
  EXPECT_EQ(f->link.width_lanes, 4U);
  EXPECT_EQ(f->link.max_width_lanes, 16U);
  ASSERT_TRUE(f->correctable);
  ASSERT_EQ(f->correctable->errors.size(), 2U);
  EXPECT_EQ(f->correctable->errors[1].name, "BadTLP");
  EXPECT_EQ(f->correctable->errors[1].value, 12U);
  EXPECT_EQ(f->correctable->messages, 13U);
  ASSERT_TRUE(f->nonfatal);
  EXPECT_EQ(f->nonfatal->errors.at(0).value, 21U);
  EXPECT_EQ(f->nonfatal->messages, 22U);
  ASSERT_TRUE(f->fatal);
  EXPECT_EQ(f->fatal->errors.at(0).name, "SDES");
  EXPECT_EQ(f->fatal->messages, 32U);
}

TEST_F(PciFunctionTest, AVirtualFunctionShowsItsPhysicalFunctionsLinkAndItsOwnErrors) {
  Reader reader(sys.root());
  ReadNotes notes;
  auto f = reader.read_pci_function("mlx5_2", notes);
  ASSERT_TRUE(f);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_EQ(notes.unavailable, 0U);  // the VF's own "Unknown" is not read
  EXPECT_EQ(f->address, "0000:3b:00.2");
  EXPECT_EQ(f->physical_function, "0000:3b:00.0");
  EXPECT_EQ(f->link.speed_transfers_per_second, 8e9);
  EXPECT_EQ(f->link.width_lanes, 4U);
  EXPECT_EQ(f->link.max_width_lanes, 16U);
  ASSERT_TRUE(f->correctable);
  EXPECT_EQ(f->correctable->errors.at(0).value, 41U);
  EXPECT_EQ(f->correctable->messages, 42U);
  EXPECT_FALSE(f->nonfatal);
  EXPECT_FALSE(f->fatal);
}

TEST_F(PciFunctionTest, AnUntrainedLinkIsUnavailableNotAProblem) {
  sys.file(pf + "current_link_speed", "Unknown\n");
  sys.file(pf + "current_link_width", "0\n");
  Reader reader(sys.root());
  ReadNotes notes;
  auto f = reader.read_pci_function("mlx5_0", notes);
  ASSERT_TRUE(f);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_EQ(notes.unavailable, 2U);
  EXPECT_EQ(f->link.speed_transfers_per_second, std::nullopt);
  EXPECT_EQ(f->link.width_lanes, std::nullopt);
  EXPECT_EQ(f->link.max_speed_transfers_per_second, 16e9);
  EXPECT_EQ(f->link.max_width_lanes, 16U);
}

TEST_F(PciFunctionTest, MalformedFilesAreProblemsAndTheRestIsRead) {
  sys.file(pf + "current_link_speed", "fast\n");
  sys.file(pf + "max_link_width", "x16\n");
  sys.file(pf + "aer_dev_nonfatal", "DLP 21\nSDES\n");
  Reader reader(sys.root());
  ReadNotes notes;
  auto f = reader.read_pci_function("mlx5_0", notes);
  ASSERT_TRUE(f);
  const std::string dir = (sys.root() / pf).string();
  EXPECT_EQ(notes.problems,
            (std::vector<std::string>{
                "read " + dir + "current_link_speed: unrecognised speed \"fast\"",
                "read " + dir + "max_link_width: not a link width: \"x16\"",
                "read " + dir + "aer_dev_nonfatal: not \"<error> <count>\": \"SDES\""}));
  EXPECT_EQ(f->link.speed_transfers_per_second, std::nullopt);
  EXPECT_EQ(f->link.max_width_lanes, std::nullopt);
  EXPECT_FALSE(f->nonfatal);
  EXPECT_EQ(f->link.width_lanes, 4U);
  EXPECT_EQ(f->fatal->messages, 32U);
}

// A conventional PCI function has no link files, one without the AER
// capability no AER files: nothing to say about either.
TEST_F(PciFunctionTest, MissingFilesAreLeftOutQuietly) {
  function("0000:5e:00.0", "pci");
  device("mlx4_0", "0000:5e:00.0");
  Reader reader(sys.root());
  ReadNotes notes;
  auto f = reader.read_pci_function("mlx4_0", notes);
  ASSERT_TRUE(f);
  EXPECT_TRUE(notes.problems.empty());
  EXPECT_EQ(notes.unavailable, 0U);
  EXPECT_EQ(f->address, "0000:5e:00.0");
  EXPECT_EQ(f->link.speed_transfers_per_second, std::nullopt);
  EXPECT_EQ(f->link.max_width_lanes, std::nullopt);
  EXPECT_FALSE(f->correctable);
}

TEST_F(PciFunctionTest, DevicesWithoutAPciFunctionHaveNone) {
  // Soft-RoCE: no device link.
  fs::create_directories(sys.root() / "class" / "infiniband" / "rxe0");
  // A device on another bus.
  fs::create_directories(sys.root() / "devices" / "platform" / "hns0");
  fs::create_symlink("../../../bus/platform",
                     sys.root() / "devices" / "platform" / "hns0" / "subsystem");
  fs::create_directories(sys.root() / "class" / "infiniband" / "hns_0");
  fs::create_symlink("../../../devices/platform/hns0",
                     sys.root() / "class" / "infiniband" / "hns_0" / "device");
  // A link to a function that is gone.
  device("mlx5_9", "0000:99:00.0");
  Reader reader(sys.root());
  for (const char* name : {"rxe0", "hns_0", "mlx5_9", "absent", "..", "mlx5_0/../mlx5_2"}) {
    ReadNotes notes;
    EXPECT_FALSE(reader.read_pci_function(name, notes)) << name;
    EXPECT_TRUE(notes.problems.empty()) << name;
  }
}

// The device removed and added again at another function: its new
// function is read, not the old one's files.
TEST_F(PciFunctionTest, ADeviceAddedAgainIsFoundAtItsNewFunction) {
  Reader reader(sys.root());
  ReadNotes notes;
  ASSERT_EQ(reader.read_pci_function("mlx5_0", notes)->address, "0000:3b:00.0");
  fs::remove_all(sys.root() / "class" / "infiniband" / "mlx5_0");
  function("0000:af:00.0", "pci");
  sys.file("devices/pci0000:00/0000:af:00.0/current_link_width", "2\n");
  device("mlx5_0", "0000:af:00.0");
  auto f = reader.read_pci_function("mlx5_0", notes);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->address, "0000:af:00.0");
  EXPECT_EQ(f->link.width_lanes, 2U);
  EXPECT_EQ(f->link.max_width_lanes, std::nullopt);
  EXPECT_FALSE(f->correctable);
}

}  // namespace
}  // namespace rdma_exporter::sysfs
