/* commands.h — the subcommands of ./qkv. Each takes the arguments after its own
 * name and returns the process exit code. */
#ifndef QKV_COMMANDS_H
#define QKV_COMMANDS_H

#include <stdio.h>

int qkv_cmd_train(int argc, char **argv);
int qkv_cmd_eval(int argc, char **argv);
int qkv_cmd_gradcheck(int argc, char **argv);
int qkv_cmd_bench(int argc, char **argv);
int qkv_cmd_data(int argc, char **argv);
int qkv_cmd_attn(int argc, char **argv);
int qkv_cmd_explain(int argc, char **argv);
int qkv_cmd_experiment(int argc, char **argv);
int qkv_cmd_detect(int argc, char **argv);
int qkv_cmd_sample(int argc, char **argv);
int qkv_cmd_version(int argc, char **argv);
/* One line per registered task, "INDENTname  summary" (usage texts). */
void qkv_print_task_list(FILE *out, const char *indent);

#endif
