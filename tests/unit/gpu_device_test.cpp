// Unit tests for include/depthbatch/gpu_device.h: how the log and the summary name the GPU a task ran on.
#include "depthbatch/gpu_device.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace depthbatch;

TEST(GpuDevice, UuidAsNvidiaSmiWritesIt) {
    const unsigned char bytes[16] = {0x8b, 0x1c, 0x3f, 0x0e, 0x12, 0x34, 0x56, 0x78,
                                     0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67};
    EXPECT_EQ(format_gpu_uuid(bytes), "GPU-8b1c3f0e-1234-5678-9abc-def001234567");
}

TEST(GpuDevice, DescribeNamesIndexCardUuidAndTheVisibleDevices) {
    GpuDevice gpu;
    gpu.index = 0;
    gpu.name = "NVIDIA H200";
    gpu.uuid = "GPU-8b1c3f0e-1234-5678-9abc-def001234567";
    gpu.visible_set = true;
    gpu.visible = "3";
    EXPECT_EQ(describe_device("cuda:0", gpu),
              "cuda:0 = NVIDIA H200 GPU-8b1c3f0e-1234-5678-9abc-def001234567 (CUDA_VISIBLE_DEVICES=3)");
    gpu.visible_set = false;
    gpu.uuid.clear();
    EXPECT_EQ(describe_device("cuda:0", gpu), "cuda:0 = NVIDIA H200");
    EXPECT_EQ(describe_device("cpu", GpuDevice{}), "cpu");
}

// The CPU entry still records CUDA_VISIBLE_DEVICES as the engine set it; a GPU the driver cannot name (no
// libcuda here) keeps its index with an empty name and UUID, and a named one has a UUID of nvidia-smi's form.
TEST(GpuDevice, QueryReadsTheEnvironmentAndTheDriverWhenThere) {
    ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
    GpuDevice cpu = query_gpu_device(-1);
    EXPECT_EQ(cpu.index, -1);
    EXPECT_TRUE(cpu.visible_set);
    EXPECT_EQ(cpu.visible, "2,3");
    ::unsetenv("CUDA_VISIBLE_DEVICES");
    cpu = query_gpu_device(-1);
    EXPECT_FALSE(cpu.visible_set);
    const GpuDevice gpu = query_gpu_device(0);
    EXPECT_EQ(gpu.index, 0);
    if (!gpu.uuid.empty()) {
        EXPECT_EQ(gpu.uuid.rfind("GPU-", 0), 0u) << gpu.uuid;
        EXPECT_EQ(gpu.uuid.size(), 40u) << gpu.uuid;
    }
}
