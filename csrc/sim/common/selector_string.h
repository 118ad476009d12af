/* selector_string.h -- a LabelSelector printed as
 * metav1.LabelSelectorAsSelector(sel).String() (selector_string.c). */
#ifndef KIN_SIM_SELECTOR_STRING_H
#define KIN_SIM_SELECTOR_STRING_H

#include <jansson.h>

/* The string of metav1.LabelSelectorAsSelector(sel): requirements sorted
 * by key and joined by ",". Returns a malloc'd string ("" for an empty or
 * absent selector) or NULL (ENOMEM). Thread-safe. */
char *kin__sim_label_selector_string(const json_t *sel);

#endif
