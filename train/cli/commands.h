/* commands.h — the subcommands of ./qkv. Each takes the arguments after its own
 * name and returns the process exit code. */
#ifndef QKV_COMMANDS_H
#define QKV_COMMANDS_H

int qkv_cmd_train(int argc, char **argv);
int qkv_cmd_train_spirals(int argc, char **argv);
int qkv_cmd_train_points(int argc, char **argv);
int qkv_cmd_train_maxreg(int argc, char **argv);
int qkv_cmd_eval(int argc, char **argv);
int qkv_cmd_gradcheck(int argc, char **argv);
int qkv_cmd_bench(int argc, char **argv);
int qkv_cmd_data(int argc, char **argv);
int qkv_cmd_attn(int argc, char **argv);
int qkv_cmd_explain(int argc, char **argv);
int qkv_cmd_experiment(int argc, char **argv);
int qkv_cmd_train_detect(int argc, char **argv);
int qkv_cmd_detect(int argc, char **argv);
/* qkv eval of a detect checkpoint (path), whose config is description. */
struct qkv_config_kv;
int qkv_eval_detect(const char *path, const struct qkv_config_kv *description, const char *data_dir);

#endif
