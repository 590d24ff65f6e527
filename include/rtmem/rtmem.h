/* rtmem: everything public in one include. */
#ifndef RTMEM_RTMEM_H
#define RTMEM_RTMEM_H

#include "rtmem/heap.h"
#include "rtmem/lock.h"
#include "rtmem/tlsf.h"
#include "rtmem/heapmem.h"
#include "rtmem/xnheap.h"
#include "rtmem/halffit.h"
#include "rtmem/pages.h"
#include "rtmem/xvheap.h"
#include "rtmem/zsheap.h"
#include "rtmem/plugin.h"
#include "rtmem/arena.h"
#include "rtmem/shared.h"
#include "rtmem/version.h"

#endif /* RTMEM_RTMEM_H */
