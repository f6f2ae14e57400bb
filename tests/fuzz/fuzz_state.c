/* gdsub's state file reader (lib/state.c): open a file (which loads it,
 * cuts a torn tail and rewrites it compacted), ask it about the runs it
 * holds, close it, and open the rewritten file again: what a restarted
 * gdsub does twice. The second open must succeed whenever the first did. */
#include "fuzz.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_state st;
	const char *path = fuzz_file("state", data, size);
	uint32_t i, nruns;

	if (gd_state_open(&st, path, 1) != 0) {
		if (st.err[0] == '\0')
			abort();
		gd_state_close(&st, 2);
		return 0;
	}
	for (i = 0; i < st.nruns; i++) {
		const struct gd_srun *run = st.runs[i];
		uint64_t s = gd_state_resume(run);
		(void)gd_state_has(run, s, 0);
		(void)gd_state_acked_end(run, run->floor);
		(void)gd_state_next_acked(run, 0);
		if (run->olen == 0 || run->olen > GD_STATE_ORIGIN_MAX)
			abort();
	}
	nruns = st.nruns;
	if (gd_state_close(&st, 2) != 0)
		abort();
	if (gd_state_open(&st, path, 3) != 0 || st.nruns != nruns)
		abort();
	gd_state_close(&st, 4);
	return 0;
}
