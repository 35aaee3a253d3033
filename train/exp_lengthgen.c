#include "train/experiments.h"
int qkv_cmd_experiment_lengthgen(int argc, char **argv) { (void)argc; (void)argv; return 2; }
