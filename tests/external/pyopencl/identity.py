#!/usr/bin/python3
"""The platform tells one story about which driver it is: what PyOpenCL
reads to recognise a driver (name, vendor, the version string and
characterize.get_pocl_version) must agree, and the version must have the
form the spec gives ("OpenCL X.Y ...").  Devices keep their own identity:
each has a non-empty name, vendor and driver version."""
import re

import pyopencl as cl
from pyopencl.characterize import get_pocl_version

from common import Checks, devices


def platform_story(checks, plat):
    by_name = plat.name == "Portable Computing Language"
    by_vendor = "pocl" in plat.vendor.lower()
    by_version = re.match(r"^OpenCL [0-9.]+ [Pp]o[Cc][Ll] ", plat.version) is not None
    by_characterize = get_pocl_version(plat) is not None
    checks.report(len({by_name, by_vendor, by_version, by_characterize}) == 1,
                  "platform name, vendor and version name one driver",
                  "" if by_name == by_vendor == by_version == by_characterize else
                  "name %r, vendor %r, version %r" % (plat.name, plat.vendor, plat.version))
    checks.report(re.match(r"^OpenCL [0-9]+\.[0-9]+ ", plat.version) is not None,
                  "platform version has the spec's form",
                  "" if plat.version.startswith("OpenCL ") else repr(plat.version))


def main():
    checks = Checks("identity")
    devs = devices()
    checks.run("platform identity", platform_story, checks, devs[0].platform)
    for i, dev in enumerate(devs):
        checks.report(bool(dev.name and dev.vendor and dev.driver_version),
                      "dev%d/%d has a name, vendor and driver version" % (i, len(devs)))
    checks.finish()


if __name__ == "__main__":
    main()
