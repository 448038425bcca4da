#!/bin/sh
# build-jar.sh JAVAC JAR OUT.jar CLASSES CLASSPATH SOURCE...
#
# Compiles the sources in one javac run into the directory CLASSES (emptied
# first, so that no class of a deleted source lingers) and packs them into
# OUT.jar. meson's jar() would start one javac per source file, each
# recompiling what that file uses. CLASSPATH may be empty.
set -eu
javac=$1 jar=$2 out=$3 classes=$4 classpath=$5
shift 5
rm -rf "$classes"
mkdir -p "$classes"
"$javac" --release 17 -encoding UTF-8 -Xlint:all -Werror -d "$classes" -cp "${classpath:-$classes}" "$@"
"$jar" --create --file "$out" -C "$classes" .
