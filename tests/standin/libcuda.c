/* A stand-in CUDA driver for the tests: the calls backends/cuda_driver.py makes, answering as a driver that shows
 * STANDIN_GPUS boards (default 1) named STANDIN_GPU_NAME (default NVIDIA L40S), supports CUDA
 * STANDIN_DRIVER_VERSION (default 12080, CUDA 12.8), and applies CUDA_VISIBLE_DEVICES as the real driver does
 * (ordinals or UUID prefixes, stopping at the first entry that names no board). STANDIN_HANG=1: cuInit never
 * returns, as a stuck driver's. Built by tests/conftest.py's `standin_driver` fixture and named by
 * $L40SBENCH_CUDA_DRIVER; no framework loads it, so each one sees no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int boards(void) {
  const char *text = getenv("STANDIN_GPUS");
  return text ? atoi(text) : 1;
}

static void uuid_of(int board, unsigned char *uuid) {
  for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0x40 + i + board);
}

static void uuid_text(int board, char *text) {  /* the 8-4-4-4-12 hex form, without its GPU- prefix */
  unsigned char u[16];
  uuid_of(board, u);
  sprintf(text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
          u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int visible[64];
static int n_visible = -1;

static void apply_visible(void) {  /* CUDA_VISIBLE_DEVICES, read once at cuInit as the driver does */
  const char *set = getenv("CUDA_VISIBLE_DEVICES");
  n_visible = 0;
  if (!set) {
    for (int b = 0; b < boards() && b < 64; b++) visible[n_visible++] = b;
    return;
  }
  char copy[1024];
  strncpy(copy, set, sizeof copy - 1);
  copy[sizeof copy - 1] = 0;
  for (char *entry = strtok(copy, ","); entry && n_visible < 64; entry = strtok(NULL, ",")) {
    int found = -1;
    if (*entry >= '0' && *entry <= '9') {
      char *end;
      long b = strtol(entry, &end, 10);
      if (*end == 0 && b < boards()) found = (int)b;
    } else {
      const char *bare = strncmp(entry, "GPU-", 4) == 0 || strncmp(entry, "MIG-", 4) == 0 ? entry + 4 : entry;
      for (int b = 0; b < boards(); b++) {
        char text[40];
        uuid_text(b, text);
        if (*bare && strncmp(text, bare, strlen(bare)) == 0) found = b;
      }
    }
    if (found < 0) break;
    visible[n_visible++] = found;
  }
}

int cuInit(unsigned int flags) {
  (void)flags;
  const char *hang = getenv("STANDIN_HANG");
  while (hang && strcmp(hang, "1") == 0) sleep(60);
  apply_visible();
  return 0;
}
int cuDriverGetVersion(int *version) {
  const char *text = getenv("STANDIN_DRIVER_VERSION");
  *version = text ? atoi(text) : 12080;
  return 0;
}
int cuDeviceGetCount(int *n) { *n = n_visible < 0 ? 0 : n_visible; return n_visible < 0 ? 3 : 0; }
int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= n_visible) return 101;
  *device = visible[ordinal];
  return 0;
}
int cuDeviceGetUuid_v2(unsigned char *uuid, int device) {
  uuid_of(device, uuid);
  return 0;
}
int cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  const char *text = getenv("STANDIN_GPU_NAME");
  strncpy(name, text ? text : "NVIDIA L40S", (size_t)length);
  return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  (void)device;
  const char *text = getenv("STANDIN_GPU_MB");
  *bytes = (size_t)(text ? atol(text) : 46068) << 20;
  return 0;
}
