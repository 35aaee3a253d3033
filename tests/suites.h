/* suites.h — every Check suite, in the order tests/run_tests.c runs them.
 *
 * X(name) is a `Suite *suite_name(void)` defined in a .c file of tests/. run_tests.c
 * declares and runs the suites from this list; test_registries.c fails when a
 * file there defines a suite that the list does not name (or names twice), and a
 * listed suite that nothing defines fails to link.
 */
#ifndef QKV_TEST_SUITES_H
#define QKV_TEST_SUITES_H

#define QKV_TEST_SUITES(X)                                                                  \
    X(step) X(registries) X(memory)                                                                \
    X(core) X(isa) X(mathfn) X(elementwise) X(reduce) X(matmul) X(softmax) X(norm) X(shape) X(npy) X(safetensors)        \
    X(gradcheck)                                                                            \
    X(patch)                                                                                \
    X(queries)                                                                              \
    X(attention) X(position) X(pos_schemes) X(reference) X(determinism) X(layers) X(mha) X(train)          \
    X(sequence) X(optim) X(trainer) X(session) X(set_tasks) X(sets) X(points) X(off) X(png)            \
    X(text) X(tokenizer)                                                                    \
    X(hungarian) X(set_loss) X(image) X(detect_data) X(viz) X(explain) X(bench) X(experiments) \
    X(reliability) X(interrupt) X(promises) X(fuzz) X(detect) X(tasks) X(sampling) X(text_task) X(torch_names) X(config_checks) X(history) X(docs) X(data_identity) X(data_budget) \
    X(web_api)

#endif
