/* heapmem: the page-and-bucket heap with free page runs in AVL trees. */
#include "rtmem/heapmem.h"
#include "pageheap_kind.h"

static const struct ph_tree_ops avl = { rtm__avl_insert, rtm__avl_remove, rtm__avl_check };
static const struct ph_tree_ops avl_logged = { rtm__avl_insert_logged, rtm__avl_remove_logged,
                                               rtm__avl_check };

RTM_PAGEHEAP_DEFINE(heapmem, RTM_KIND_HEAPMEM, &avl, &avl_logged);
