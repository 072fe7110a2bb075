/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: an @FILE of options (tpu_args_expand), its options through the shared option
   scanner (tpu_cli_next, tpu-run's table) and the host options (tpu_host_add_option: --load,
   --dump address and shape arithmetic, --hostmem-mib), then tpu_host_dump_all's range checks
   on a small image. Property: no fault; a dump accepted lies inside the image or is
   refused by tpu_host_dump_all (never read outside it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tpu/cli.h"
#include "tpu/host.h"

static const tpu_cli_opt_t opts[] = {
    { "help", 'h', 0, 0 },         { "mxu", 0, TPU_CLI_VALUE, 1 },
    { "trace", 0, TPU_CLI_VALUE, 2 }, { "prog", 0, TPU_CLI_VALUE, 3 },
    { "load", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, 3 },
    { "dump", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, 3 },
    { "dump-dir", 0, TPU_CLI_VALUE, 3 }, { "hostmem-mib", 0, TPU_CLI_VALUE, 3 },
    { "seed", 'o', TPU_CLI_VALUE, 4 }, { NULL, 0, 0, 0 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("opts.args", data, size);
    char at[300], err[1024];
    snprintf(at, sizeof at, "@%s", path);
    char *argv[3] = { "fuzz", at, NULL };
    int xargc;
    char **xargv;
    if (tpu_args_expand(2, argv, &xargc, &xargv, err, sizeof err) != 0)
        return 0;
    tpu_host_t h;
    tpu_host_init(&h);
    tpu_cli_t cl;
    tpu_cli_init(&cl, xargc, xargv, opts);
    for (;;) {
        const char *name, *val;
        uint64_t x;
        int id = tpu_cli_next(&cl, &name, &val, err, sizeof err);
        if (id == TPU_CLI_END || id == TPU_CLI_ERROR)
            break;
        if (id == 1)
            (void)tpu_cli_count(name, val, 1, 256, &x, err, sizeof err);
        else if (id == 4)
            (void)tpu_cli_addr(name, val, 0, UINT64_MAX - 1, &x, err, sizeof err);
        else if (id == 3 && strcmp(name, "--hostmem-mib") != 0) /* no 4 GiB images here */
            (void)tpu_host_add_option(&h, name, val, err, sizeof err);
    }
    /* a 64 KiB image instead of --hostmem-mib's: every accepted dump is range-checked */
    h.mem = calloc(1, 65536);
    h.size = 65536;
    if (h.mem != NULL && h.ndumps) {
        free(h.dump_dir);
        h.dump_dir = NULL;
        for (size_t i = 0; i < h.ndumps; i++) {
            free(h.dumps[i].path);
            h.dumps[i].path = strdup("/dev/null"); /* written in place, never replaced */
        }
        (void)tpu_host_dump_all(&h, err, sizeof err);
    }
    tpu_host_free(&h);
    tpu_args_free(xargc, xargv);
    return 0;
}
