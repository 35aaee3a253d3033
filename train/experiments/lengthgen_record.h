/* lengthgen_record.h — the JSON record of a lengthgen run (lengthgen_record.c),
 * which holds the report's summaries and the distances (lengthgen_report.h; the
 * line is in lengthgen_runs.h). */
#ifndef QKV_LENGTHGEN_RECORD_H
#define QKV_LENGTHGEN_RECORD_H

#include "train/experiments/lengthgen_report.h"

int qkv_lg_write_json(const qkv_lengthgen *g);
/* Reads options->json back into g's records (provenance included), after
 * checking that it is this experiment (same qkv version, same settings); 0, or
 * -1 with a one-line qkv_last_error() naming --resume. */
int qkv_lg_resume(qkv_lengthgen *g);

#endif
