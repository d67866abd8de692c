/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-image.c: the job's image at acceptance: an imported or directory image looked up and held (nothing
 * is created; a missing one is a refusal; the embedded image is generated per job, later, in the job's
 * runtime directory), and the profile's "images" asked whether it may run (docs/images.md). */
#include "basic/string-util.h"
#include "job.h"

/* By digest or by any name the image has here. */
static int image_allowed(const Job *j, char **ret_error) {
        const ResolvedPolicy *res = j->input.resolved;
        const ImageLayout *l = &j->staging.image;
        char *const one[] = { res->image, NULL };

        if (policy_image_allowed(res, l->digest, l->digest ? l->names : one))
                return 0;
        *ret_error = strdupf("sandbox.overrides.image: image %s%s%s is not allowed by profile %s", res->image,
                             l->digest ? " = " : "", l->digest ?: "", res->profile);
        return -EPERM;
}

int job_image_accept(Job *j, char **ret_error) {
        const ResolvedPolicy *res = j->input.resolved;
        int r;

        if (!streq(res->image, IMAGE_HOST)) {
                r = image_prepare(res->image, j->paths.images, j->paths.run, &j->staging.image, ret_error);
                if (r < 0)
                        return r;
        }
        return image_allowed(j, ret_error);
}
