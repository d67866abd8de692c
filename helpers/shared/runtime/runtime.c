/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* runtime.c: the provider table: every provider, found by name. */
#include <string.h>

#include "runtime/runtime.h"

const RuntimeProvider *const runtime_providers[] = {
        &runtime_runc,
        &runtime_runsc,
        &runtime_kata,
        NULL,
};

size_t runtime_provider_count(void) {
        return ELEMENTSOF(runtime_providers) - 1;
}

const RuntimeProvider *runtime_provider_find(const char *name) {
        if (!name)
                return NULL;
        RUNTIME_PROVIDER_FOREACH(p)
                if (streq(p->name, name))
                        return p;
        return NULL;
}
