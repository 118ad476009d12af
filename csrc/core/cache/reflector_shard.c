/* reflector_shard.c -- a reflector's shard selector (KEP-5866): what it
 * sends as ?shardSelector=, the client-side filter that keeps the cache
 * right when the server ignores it, and the re-list when it changes
 * (kin_reflector_set_shard_selector). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "log.h"
#include "reflector_int.h"
#include "shard_selector.h"

#define LOG "reflector"

int kin_reflector_set_shard_selector(kin_reflector *r, const char *selector, char *err,
                                     size_t errlen) {
  char *copy = NULL;
  if (selector && *selector) {
    kin_shard_selector *sel;
    int rc = kin_shard_selector_parse(selector, &sel, err, errlen);
    if (rc < 0) return rc;
    kin_shard_selector_free(sel);
    if (!(copy = strdup(selector))) return KIN_ENOMEM;
  }
  pthread_mutex_lock(&r->mu);
  int same = (!copy && !r->shard) || (copy && r->shard && !strcmp(copy, r->shard));
  if (same) {
    pthread_mutex_unlock(&r->mu);
    free(copy);
    return 0;
  }
  free(r->shard);
  r->shard = copy;
  r->shard_gen++;
  r->shard_warned = 0;
  r->st.shard_server_filtered = -1;
  /* a running reflector lists again at once: its watch loop sees reshard */
  if (r->started) r->reshard = 1;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
  /* a LIST in flight completes with the old ranges; the watch after it
   * is not started (the loop sees reshard) */
  return 0;
}

size_t kin_reflector_shard_selector(kin_reflector *r, char *buf, size_t cap) {
  pthread_mutex_lock(&r->mu);
  int n = snprintf(buf, cap, "%s", r->shard ? r->shard : "");
  pthread_mutex_unlock(&r->mu);
  return n < 0 ? 0 : (size_t)n;
}

void kin__rfl_shard_refresh(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  if (r->shard_cur_gen == r->shard_gen) {
    pthread_mutex_unlock(&r->mu);
    return;
  }
  char *s = r->shard ? strdup(r->shard) : NULL;
  uint64_t gen = r->shard_gen;
  pthread_mutex_unlock(&r->mu);
  kin_shard_selector *sel = NULL;
  if (s && kin_shard_selector_parse(s, &sel, NULL, 0) < 0) sel = NULL; /* checked when set */
  kin_shard_selector_free(r->shard_cur);
  free(r->shard_cur_str);
  r->shard_cur = sel;
  r->shard_cur_str = sel ? s : NULL;
  if (!sel) free(s);
  r->shard_cur_gen = gen;
}

int kin__rfl_shard_keep(kin_reflector *r, const kin_obj *o) {
  if (!r->shard_cur || kin_shard_selector_matches(r->shard_cur, kin_obj_uid(o), kin_obj_namespace(o)))
    return 1;
  pthread_mutex_lock(&r->mu);
  r->st.shard_client_dropped++;
  pthread_mutex_unlock(&r->mu);
  return 0;
}

int kin__rfl_reshard_pending(kin_reflector *r) {
  pthread_mutex_lock(&r->mu);
  int p = r->reshard;
  pthread_mutex_unlock(&r->mu);
  return p;
}

/* Called by reflector_list.c when a LIST with a selector completed:
 * records whether the server filtered (shard_info: the list carried
 * metadata.shardInfo) and warns once per selector when it did not. */
void kin__rfl_shard_listed(kin_reflector *r, int shard_info, const char *url) {
  if (!r->shard_cur) return;
  pthread_mutex_lock(&r->mu);
  r->st.shard_server_filtered = shard_info ? 1 : 0;
  int warn = !shard_info && !r->shard_warned;
  if (warn) r->shard_warned = 1;
  pthread_mutex_unlock(&r->mu);
  if (warn)
    kin_log(KIN_LOG_WARN, LOG,
            "%s: GET %s%s: the server ignored shardSelector (no metadata.shardInfo in the list: "
            "feature gate ShardedListAndWatch off, or a server older than v1.36); kinformer "
            "filters on the client: the cache holds only this replica's ranges, but every "
            "object is still sent and decoded by every replica",
            r->name, kin_client_host(r->client), url);
}
