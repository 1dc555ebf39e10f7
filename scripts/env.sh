# Sourced by every script: selects JDK 25 (the machines' default java is 17) and quiet Maven.
if [ -z "${JAVA_HOME:-}" ] || ! "${JAVA_HOME}/bin/java" -version 2>&1 | grep -q 'version "25'; then
  for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25-jdk /usr/lib/jvm/java-25-openjdk-amd64 /usr/lib/jvm/jdk-25; do
    if [ -x "$candidate/bin/java" ]; then export JAVA_HOME="$candidate"; break; fi
  done
fi
if [ -z "${JAVA_HOME:-}" ] || ! "${JAVA_HOME}/bin/java" -version 2>&1 | grep -q 'version "25'; then
  echo "ringmaster: JDK 25 not found. Install Temurin 25 (apt package temurin-25-jdk) or set JAVA_HOME to a JDK 25." >&2
  exit 1
fi
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
