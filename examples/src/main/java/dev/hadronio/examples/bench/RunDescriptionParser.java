package dev.hadronio.examples.bench;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reads a run description (JSON) and checks every field; errors name the path of the bad field, e.g.
 * {@code operations[1].iterations[0].size must be >= 1}. Observatory's own keys {@code className} and
 * {@code detector} are accepted and ignored; any other unknown key is an error, so typos do not pass silently.
 */
public final class RunDescriptionParser {

    private static final Set<String> TOP_KEYS = keys("resultName", "className", "parameters", "detector",
            "operations");
    private static final Set<String> OPERATION_KEYS = keys("name", "modes", "repetitions", "iterations");
    private static final Set<String> ITERATION_KEYS = keys("size", "count", "warmUp");
    private static final Set<String> PARAMETER_KEYS = keys("key", "value");

    private RunDescriptionParser() {
    }

    /** Reads and parses a file; the message of any failure names the file. */
    public static RunDescription parse(Path file) throws IOException {
        String text;
        try {
            text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IOException("cannot read run description " + file + ": " + e.getMessage(), e);
        }
        try {
            return parse(text);
        } catch (IllegalArgumentException e) {
            throw new IOException("bad run description " + file + ": " + e.getMessage(), e);
        }
    }

    /** Parses JSON text; throws {@link IllegalArgumentException} naming the bad field. */
    public static RunDescription parse(String json) {
        JsonElement root;
        try {
            root = JsonParser.parseString(json);
        } catch (JsonParseException e) {
            throw new IllegalArgumentException("not valid JSON: " + e.getMessage(), e);
        }
        JsonObject top = object(root, "the top level");
        checkKeys(top, TOP_KEYS, "the top level");

        String resultName = top.has("resultName") ? string(top.get("resultName"), "resultName")
                : top.has("className") ? string(top.get("className"), "className") : null;
        if (resultName == null || resultName.trim().isEmpty()) {
            throw new IllegalArgumentException("resultName is missing or empty");
        }

        Map<String, String> parameters = new LinkedHashMap<>();
        if (top.has("parameters")) {
            JsonArray array = array(top.get("parameters"), "parameters");
            for (int i = 0; i < array.size(); i++) {
                String path = "parameters[" + i + "]";
                JsonObject p = object(array.get(i), path);
                checkKeys(p, PARAMETER_KEYS, path);
                String key = string(required(p, "key", path), path + ".key");
                String value = scalar(required(p, "value", path), path + ".value");
                if (parameters.put(key, value) != null) {
                    throw new IllegalArgumentException(path + ": parameter '" + key + "' given twice");
                }
            }
        }

        JsonArray ops = array(required(top, "operations", "the top level"), "operations");
        if (ops.size() == 0) {
            throw new IllegalArgumentException("operations is empty");
        }
        List<RunDescription.Operation> operations = new ArrayList<>();
        for (int i = 0; i < ops.size(); i++) {
            operations.add(operation(ops.get(i), "operations[" + i + "]"));
        }
        return new RunDescription(resultName.trim(), parameters, operations);
    }

    private static RunDescription.Operation operation(JsonElement element, String path) {
        JsonObject o = object(element, path);
        checkKeys(o, OPERATION_KEYS, path);
        String name = string(required(o, "name", path), path + ".name");
        OperationKind kind = OperationKind.fromJson(name);
        if (kind == null) {
            throw new IllegalArgumentException(path + ".name: unknown operation '" + name + "' (expected "
                    + OperationKind.names() + ")");
        }
        List<OperationMode> modes = new ArrayList<>();
        if (o.has("modes")) {
            JsonArray array = array(o.get("modes"), path + ".modes");
            for (int i = 0; i < array.size(); i++) {
                String m = string(array.get(i), path + ".modes[" + i + "]");
                OperationMode mode = OperationMode.fromJson(m);
                if (mode == null) {
                    throw new IllegalArgumentException(path + ".modes[" + i + "]: unknown mode '" + m
                            + "' (expected unidirectional or bidirectional)");
                }
                if (!kind.allows(mode)) {
                    throw new IllegalArgumentException(path + ".modes[" + i + "]: " + name + " can only run "
                            + OperationMode.UNIDIRECTIONAL.jsonName());
                }
                if (modes.contains(mode)) {
                    throw new IllegalArgumentException(path + ".modes: '" + m + "' given twice");
                }
                modes.add(mode);
            }
        }
        if (modes.isEmpty()) {
            throw new IllegalArgumentException(path + ".modes is missing or empty");
        }
        int repetitions = o.has("repetitions") ? integer(o.get("repetitions"), path + ".repetitions", 1) : 1;
        JsonArray its = array(required(o, "iterations", path), path + ".iterations");
        if (its.size() == 0) {
            throw new IllegalArgumentException(path + ".iterations is empty");
        }
        List<RunDescription.Iteration> iterations = new ArrayList<>();
        for (int i = 0; i < its.size(); i++) {
            String itPath = path + ".iterations[" + i + "]";
            JsonObject it = object(its.get(i), itPath);
            checkKeys(it, ITERATION_KEYS, itPath);
            int size = integer(required(it, "size", itPath), itPath + ".size", 1);
            int count = integer(required(it, "count", itPath), itPath + ".count", 1);
            int warmUp = it.has("warmUp") ? integer(it.get("warmUp"), itPath + ".warmUp", 0) : 0;
            iterations.add(new RunDescription.Iteration(size, count, warmUp));
        }
        return new RunDescription.Operation(kind, modes, repetitions, iterations);
    }

    private static Set<String> keys(String... names) {
        return new HashSet<>(Arrays.asList(names));
    }

    private static void checkKeys(JsonObject o, Set<String> allowed, String path) {
        for (String key : o.keySet()) {
            if (!allowed.contains(key)) {
                throw new IllegalArgumentException(path + ": unknown key '" + key + "' (allowed: "
                        + String.join(", ", new TreeSet<>(allowed)) + ")");
            }
        }
    }

    private static JsonElement required(JsonObject o, String key, String path) {
        JsonElement e = o.get(key);
        if (e == null || e.isJsonNull()) {
            throw new IllegalArgumentException(path + ": '" + key + "' is missing");
        }
        return e;
    }

    private static JsonObject object(JsonElement e, String path) {
        if (!e.isJsonObject()) {
            throw new IllegalArgumentException(path + " must be an object");
        }
        return e.getAsJsonObject();
    }

    private static JsonArray array(JsonElement e, String path) {
        if (!e.isJsonArray()) {
            throw new IllegalArgumentException(path + " must be an array");
        }
        return e.getAsJsonArray();
    }

    private static String string(JsonElement e, String path) {
        if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) {
            throw new IllegalArgumentException(path + " must be a string");
        }
        return e.getAsString();
    }

    /** Observatory writes parameter values as strings; numbers and booleans are accepted too. */
    private static String scalar(JsonElement e, String path) {
        if (!e.isJsonPrimitive()) {
            throw new IllegalArgumentException(path + " must be a string, number or boolean");
        }
        return e.getAsString();
    }

    private static int integer(JsonElement e, String path, int min) {
        if (!e.isJsonPrimitive() || !((JsonPrimitive) e).isNumber()) {
            throw new IllegalArgumentException(path + " must be a number");
        }
        double d = e.getAsDouble();
        if (d != Math.rint(d) || d > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(path + " must be a whole number <= " + Integer.MAX_VALUE
                    + ", got " + e.getAsString());
        }
        if (d < min) {
            throw new IllegalArgumentException(path + " must be >= " + min + ", got " + e.getAsString());
        }
        return (int) d;
    }
}
