// SPDX-License-Identifier: LGPL-2.1-or-later
module example.org/pondwl

go 1.19
