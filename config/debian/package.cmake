# The Debian package rdma-exporter, built by CPack's DEB generator from the
# install() rules of the top-level CMakeLists.txt: scripts/package, or
# `cmake --build build --target rdma_exporter man && cpack --config build/CPackConfig.cmake`
# (docs/packaging.md). The maintainer scripts, conffiles, copyright and
# changelog are the files next to this one.

set(RDMA_DEBIAN_DIR ${CMAKE_CURRENT_LIST_DIR})

# The package version is the changelog's; it must be the project's.
find_program(DPKG_PARSECHANGELOG dpkg-parsechangelog)
if(DPKG_PARSECHANGELOG)
  foreach(field Version Timestamp Maintainer)
    execute_process(COMMAND ${DPKG_PARSECHANGELOG} -l ${RDMA_DEBIAN_DIR}/changelog -S${field}
                    OUTPUT_VARIABLE RDMA_CHANGELOG_${field} OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "dpkg-parsechangelog cannot read ${RDMA_DEBIAN_DIR}/changelog")
    endif()
  endforeach()
  if(NOT RDMA_CHANGELOG_Version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "config/debian/changelog is at version ${RDMA_CHANGELOG_Version}, "
                        "the project at ${PROJECT_VERSION}: add a changelog entry")
  endif()
else()
  # Without dpkg-dev (scripts/setup installs it) the man page still builds;
  # only the package needs the changelog's fields.
  set(RDMA_CHANGELOG_Timestamp 0)
  set(RDMA_CHANGELOG_Maintainer "rdma_exporter maintainers")
endif()

# rdma_exporter(8) from --help (docs/man/build-man), gzip -9n.
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/man/rdma_exporter.8 ${CMAKE_BINARY_DIR}/man/rdma_exporter.8.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND ${PROJECT_SOURCE_DIR}/docs/man/build-man $<TARGET_FILE:rdma_exporter>
          ${PROJECT_VERSION} ${RDMA_CHANGELOG_Timestamp} ${CMAKE_BINARY_DIR}/man/rdma_exporter.8
  DEPENDS rdma_exporter ${PROJECT_SOURCE_DIR}/docs/man/build-man
          ${PROJECT_SOURCE_DIR}/docs/man/rdma_exporter.h2m ${RDMA_DEBIAN_DIR}/changelog
  COMMENT "Generating the man page rdma_exporter(8) from --help"
  VERBATIM)
# The changelog as Debian installs it.
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/debian/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/debian
  COMMAND sh -c "gzip -9n -c \"$0\" >\"$1\"" ${RDMA_DEBIAN_DIR}/changelog
          ${CMAKE_BINARY_DIR}/debian/changelog.gz
  DEPENDS ${RDMA_DEBIAN_DIR}/changelog
  VERBATIM)
add_custom_target(man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/rdma_exporter.8.gz
                                  ${CMAKE_BINARY_DIR}/debian/changelog.gz)

# Documentation goes to /usr/share/doc/rdma-exporter (the package's name:
# Debian package names have no underscore); /usr/share/doc/rdma_exporter, the
# path the alerts' runbook_url names, is a symbolic link to it.
set(RDMA_EXPORTER_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/rdma-exporter)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/debian)
file(CREATE_LINK rdma-exporter ${CMAKE_BINARY_DIR}/debian/rdma_exporter SYMBOLIC)
install(FILES ${CMAKE_BINARY_DIR}/debian/rdma_exporter DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc)
install(FILES ${RDMA_DEBIAN_DIR}/copyright ${CMAKE_BINARY_DIR}/debian/changelog.gz
        DESTINATION ${RDMA_EXPORTER_DOCDIR})
install(FILES ${CMAKE_BINARY_DIR}/man/rdma_exporter.8.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

# cpack installs what is built: it does not build every target (the tests)
# first. scripts/package builds rdma_exporter and man, then runs cpack.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rdma-exporter)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "rdma_exporter maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Prometheus exporter for the Linux RDMA stack")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_NAME rdma-exporter)
set(CPACK_DEBIAN_PACKAGE_VERSION ${RDMA_CHANGELOG_Version})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${RDMA_CHANGELOG_Maintainer})
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY before this, as the synopsis.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "rdma_exporter serves the kernel's RDMA counters for Prometheus: devices,
ports and their hw counters from rdma netlink and sysfs, resource counts,
per-process QP counters, InfiniBand PMA counters and the RoCE congestion and
QoS statistics of the netdevs. An optional libibverbs probe measures RDMA
latency and loss between hosts.
.
The package runs it as a hardened systemd service under a dedicated user
without capabilities, and ships Grafana dashboards and Prometheus alerting
rules.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst makes the user with systemd-sysusers.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd | systemd-standalone-sysusers | opensysusers")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${RDMA_DEBIAN_DIR}/postinst ${RDMA_DEBIAN_DIR}/prerm ${RDMA_DEBIAN_DIR}/postrm
    ${RDMA_DEBIAN_DIR}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
