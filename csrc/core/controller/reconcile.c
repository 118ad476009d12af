/* reconcile.c -- reconcile requests as workqueue keys (see reconcile.h). */
#include "reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"

int kin_request_add(kin_workqueue *q, const char *ns, const char *name) {
  return kin_request_add_priority(q, ns, name, KIN_PRIORITY_NORMAL);
}

int kin_request_add_priority(kin_workqueue *q, const char *ns, const char *name, int priority) {
  /* Keys of real objects fit the stack buffer (a namespace has at most 63
   * bytes, a name 253); only odd requests go to the heap. */
  char buf[384];
  int cluster = !ns || !*ns;
  int n = cluster ? snprintf(buf, sizeof(buf), "%s", name)
                  : snprintf(buf, sizeof(buf), "%s/%s", ns, name);
  if (n < 0) return KIN_EINVAL;
  if ((size_t)n < sizeof(buf)) {
    kin_workqueue_add_priority(q, buf, priority);
    return 0;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) return KIN_ENOMEM;
  if (cluster) memcpy(big, name, (size_t)n + 1);
  else snprintf(big, (size_t)n + 1, "%s/%s", ns, name);
  kin_workqueue_add_priority(q, big, priority);
  free(big);
  return 0;
}
