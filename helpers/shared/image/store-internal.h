/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store-internal.h: what store.c lends import.c: subdirectories, records and refs. */
#pragma once

#include "image/image-store.h"

/* Opens (creating, 0700) the store's subdirectory name. */
int store_subdir(const ImageStore *s, const char *name);
int store_ref_file(const char *name, char ret[IMAGE_REF_MAX + 1]);
/* Atomic: the image becomes visible to jobs only once its record is there, i.e. after its layers. */
int store_record_write(const ImageStore *s, const ImageRecord *rec);
int store_ref_write(const ImageStore *s, const char *name, const char *digest);
/* Removes the tmp/ entries no live import holds. */
int store_tmp_sweep(const ImageStore *s);
