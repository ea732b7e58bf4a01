/* A stand-in CUDA driver for the tests: the seven calls backends/cuda_driver.py makes, answering as a driver that
 * shows NVIDIA L40S boards (STANDIN_GPUS of them, default 1). Built by tests/conftest.py's `standin_driver`
 * fixture and named by $L40SBENCH_CUDA_DRIVER; no framework loads it, so each one sees no GPU. */
#include <stdlib.h>
#include <string.h>

static int count(void) {
  const char *text = getenv("STANDIN_GPUS");
  return text ? atoi(text) : 1;
}

int cuInit(unsigned int flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *version) { *version = 12080; return 0; }
int cuDeviceGetCount(int *n) { *n = count(); return 0; }
int cuDeviceGet(int *device, int ordinal) { *device = ordinal; return ordinal < count() ? 0 : 101; }
int cuDeviceGetUuid_v2(unsigned char *uuid, int device) {
  for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0x40 + i + device);
  return 0;
}
int cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  strncpy(name, "NVIDIA L40S", (size_t)length);
  return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  (void)device;
  *bytes = (size_t)46068 << 20;
  return 0;
}
