/* checks.c — the table of every gradient-check group, made from the list in
 * checks.h: `./qkv gradcheck` and tests/test_gradcheck.c loop over it. */
#include "layers/check/checks.h"

#define QKV_GRADCHECK_ADDRESS_(name) &qkv_checks_##name,
const qkv_gradcheck_group *const qkv_gradcheck_groups[QKV_GRADCHECK_N_GROUPS] = {
    QKV_GRADCHECK_GROUPS(QKV_GRADCHECK_ADDRESS_)
};
#undef QKV_GRADCHECK_ADDRESS_
