/* xnheap: the page-and-bucket heap with free page runs in red-black trees. */
#include "rtmem/xnheap.h"
#include "pageheap_kind.h"

static const struct ph_tree_ops rb = { rtm__rb_insert, rtm__rb_remove, rtm__rb_check };
static const struct ph_tree_ops rb_logged = { rtm__rb_insert_logged, rtm__rb_remove_logged,
                                              rtm__rb_check };

RTM_PAGEHEAP_DEFINE(xnheap, RTM_KIND_XNHEAP, &rb, &rb_logged);
