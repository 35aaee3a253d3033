#include "train/commands.h"
int qkv_cmd_explain(int argc, char **argv) { (void)argc; (void)argv; return 2; }
