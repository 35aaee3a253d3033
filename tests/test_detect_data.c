#include <check.h>
Suite *suite_detect_data(void); Suite *suite_detect_data(void) { return suite_create("detect_data"); }
